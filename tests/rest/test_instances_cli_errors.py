"""``streamrt instances`` pointed at the wrong place: one ``streamrt: error:`` line, exit 1.

An operator's ``--url`` may name a peer that is down, no URL at all, or a web server that is
not a streamrt instance (a proxy's error page, another service on that port). Each must be a
one-line error naming the URL, never a JSON parser's message, a KeyError or an HTML page.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.rest.instances import free_port


class _NotStreamrt(BaseHTTPRequestHandler):
    """A web server of another kind: ``/v1/instances`` answers 200 HTML, the rest 200 JSON
    of another shape, ``/v1/missing`` 404 with a multi-line HTML page."""

    def do_GET(self) -> None:
        if self.path.startswith("/html"):
            self._answer(200, "text/html", b"<html>\n<body>a web shop</body>\n</html>\n")
        elif self.path.startswith("/missing"):
            self._answer(404, "text/html", b"<html>\n<h1>Not here</h1>\n</html>\n")
        else:
            self._answer(200, "application/json", b'{"status": "ok"}')

    do_POST = do_GET

    def _answer(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotStreamrt)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def streamrt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamrt.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("streamrt: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("action", [["list"], ["remove", "--instance", "web-3"]])
@pytest.mark.parametrize("prefix", ["/html", "/json"])
def test_a_url_that_is_not_a_streamrt_instance_is_one_clear_error(
    other_server: str, action: list[str], prefix: str
) -> None:
    proc = streamrt("instances", action[0], "--url", other_server + prefix, *action[1:])
    assert_one_error_line(proc, other_server + prefix, "not a streamrt REST endpoint")
    assert proc.stdout == ""


def test_an_error_page_is_one_line(other_server: str) -> None:
    proc = streamrt("instances", "list", "--url", other_server + "/missing")
    assert_one_error_line(proc, "HTTP 404", "Not here")


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://127.0.0.1:{free}", "cannot reach"),  # nothing listens there
        ("127.0.0.1:7070", "http://"),  # no scheme
        ("http://[::1", "--url"),  # not a URL at all
    ],
)
def test_an_unreachable_or_malformed_url_is_one_clear_error(url: str, needle: str) -> None:
    # the free port is picked here, not at collection: pytest-xdist's workers must collect
    # the same test ids
    url = url.replace("{free}", str(free_port()))
    assert_one_error_line(streamrt("instances", "list", "--url", url), needle)
