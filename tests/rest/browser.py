"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``).

No websocket client and no chromedriver: Chromium reads JSON commands, each ended by a NUL
byte, on its fd 3 and writes replies and events on its fd 4. Enough of the protocol for the
console's tests: open a page, evaluate JavaScript, click and type like a person (input
events at an element's position), take a screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ("CHROMIUM", "Browser", "chromium_missing")

CHROMIUM = "/usr/bin/chromium"


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run does)"
    return None


def _high(fd: int) -> int:
    """A copy of ``fd`` numbered 10 or above, so moving it to 3/4 in the child clobbers nothing."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Browser:
    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        self.width, self.height = width, height
        self._profile = tempfile.mkdtemp(prefix="streamrt-chromium-")
        to_chrome_r, self._to_chrome = (_high(fd) for fd in os.pipe())
        self._from_chrome, from_chrome_w = (_high(fd) for fd in os.pipe())

        def wire_fds() -> None:  # in the child, before exec
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        args = [
            CHROMIUM,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self._process = subprocess.Popen(
            args,
            preexec_fn=wire_fds,
            # close_fds would close 3 and 4 after wire_fds; Python's own fds are not
            # inheritable (PEP 446), so only the two dup2'd ones reach chromium
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=None if os.environ.get("STREAMRT_CHROMIUM_LOG") else subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        attached = self.send("Target.attachToTarget", targetId=target, flatten=True)
        self._session = attached["sessionId"]
        self.send("Page.enable", session=True)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self._from_chrome, 65536)
            if not chunk:
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._cond:
                        self._replies[message["id"]] = message
                        self._cond.notify_all()

    def send(
        self, method: str, *, session: bool = False, timeout: float = 30, **params: Any
    ) -> Any:
        with self._cond:
            self._next_id += 1
            call_id = self._next_id
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while call_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or not self._cond.wait(left):
                    raise TimeoutError(f"chromium did not answer {method} in {timeout} s")
            reply = self._replies.pop(call_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def open(self, url: str) -> None:
        self.send("Page.navigate", session=True, url=url)

    def js(self, expression: str, timeout: float = 30) -> Any:
        """The value of ``expression`` (awaited if a promise); raises on a page exception."""
        result = self.send(
            "Runtime.evaluate",
            session=True,
            timeout=timeout,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_js(self, expression: str, timeout: float, what: str) -> Any:
        """Poll ``expression`` until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.js(expression)
            except RuntimeError:
                value = None
            if value:
                return value
            time.sleep(0.25)
        raise TimeoutError(f"page: timed out after {timeout:.0f}s waiting for {what}")

    def click(self, selector: str) -> None:
        """A left click at the middle of the element, as a mouse would (not element.click())."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
        )
        if box is None:
            raise LookupError(f"no element {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                session=True,
                type=kind,
                x=box["x"],
                y=box["y"],
                button="left",
                clickCount=1,
            )

    def type_text(self, selector: str, text: str) -> None:
        self.click(selector)
        self.send("Input.insertText", session=True, text=text)

    def screenshot(self, path: Path, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": self.width,
                "height": min(int(size["height"]), 4000),
                "scale": 1,
            }
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", session=True, **params)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(TimeoutError, RuntimeError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
