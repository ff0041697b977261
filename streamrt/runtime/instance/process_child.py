"""The child side of ``stream.thread.mode=process``: one stream thread in its own process.

Started by :class:`~streamrt.runtime.instance.process_thread.ProcessStreamThread` as
``python -m streamrt.runtime.instance.process_child FD`` with one end of a socket pair. It
imports the App (``MODULE:ATTR``), applies the parent's settings, and runs exactly one
:class:`~streamrt.runtime.engine.thread.thread.StreamThread` with the parent's instance id and
the thread index it was given, so it joins as ``<instance id>-thread-<n>``. It forwards every event
with a status snapshot, answers store reads, and stops (commits, no LeaveGroup) on ``stop``, on
SIGTERM, or when the parent goes away (end of file on the socket). Restarts are the parent's job.
"""

from __future__ import annotations

import logging
import pickle
import signal
import sys
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from streamrt.clock import SystemClock
from streamrt.errors import ConfigError
from streamrt.logs import configure_logging, fields
from streamrt.runtime.engine.thread.global_thread import GlobalStreamThread
from streamrt.runtime.engine.thread.thread import FatalThreadError, StreamThread, ThreadEnv
from streamrt.runtime.instance.process_thread import STATUS_INTERVAL_S, load_app_object
from streamrt.runtime.instance.store_reads import StoreRead, read_on_thread
from streamrt.runtime.instance.supervisor import failure_key

logger = logging.getLogger(__name__)


class _Child:
    """Responsibilities: run the thread, relay its events and status, serve requests."""

    def __init__(self, conn: Connection, init: Mapping[str, Any]) -> None:
        from streamrt.runtime.instance.app import App  # only in a child: the App's module

        self.conn = conn
        self._send_lock = threading.Lock()
        app = load_app_object(str(init["app_spec"]))
        if not isinstance(app, App):
            raise ConfigError(f"{init['app_spec']} is not a streamrt App")
        app.configure(dict(init["settings"]))
        config = app.resolve_config()
        self.errors = config.error_handlers()
        self.global_thread: GlobalStreamThread | None = None
        specs = list(app.topology.global_tables.values())
        if specs:
            self.global_thread = GlobalStreamThread(
                config,
                f"{config.application_id}-{init['instance_id']}-{init['index']}",
                specs,
            )
            self.global_thread.start()
        env = ThreadEnv(
            config,
            app.topology,
            tuple(app.topology.subtopologies(config.application_id)),
            str(init["instance_id"]),
            bool(init["static"]),
            self._emit,
            SystemClock(),
            self.errors,
        )
        self.thread = StreamThread(env, int(init["index"]))
        self._go = threading.Event()

    def _send(self, message: Any) -> None:
        try:
            with self._send_lock:
                self.conn.send(message)
        except (OSError, ValueError):
            # the parent is gone: stop as on SIGTERM, the lock released first (the stop sends
            # its own event through here: under the lock the sender waited on itself forever)
            self.thread.stop()

    def _status(self) -> dict[str, Any]:
        thread = self.thread
        return {
            "metadata": thread.metadata(),
            "member_id": thread.member_id,
            "assignment_info": thread.assignment_info,
            "tasks": list(thread.tasks),
            "errors": self.errors.stats.snapshot(),
            "committed": thread.committed.is_set(),
            "stopped_cleanly": thread.stopped_cleanly,
        }

    def _emit(self, type_: str, thread_index: int | None, **kv: Any) -> None:
        if not hasattr(self, "thread"):
            return
        safe = {k: v if _picklable(v) else repr(v) for k, v in kv.items()}
        self._send(("event", type_, thread_index, safe, self._status()))

    def _serve_requests(self) -> None:
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                logger.warning("the supervising process is gone: stopping")
                self.thread.stop()
                self._go.set()
                return
            if message[0] == "go":
                self._go.set()
            elif message[0] == "stop":
                self.thread.stop()
                self._go.set()
            elif message[0] == "read":
                threading.Thread(target=self._answer, args=message[1:], daemon=True).start()

    def _answer(self, request_id: int, task_id: str, read: StoreRead, timeout: float) -> None:
        try:
            reply: tuple[Any, ...] = (
                "reply",
                request_id,
                True,
                read_on_thread(self.thread, task_id, read, timeout),
            )
        except Exception as exc:
            reply = ("reply", request_id, False, exc)
        try:
            self._send(reply)
        except Exception as exc:  # an unpicklable value or error
            self._send(("reply", request_id, False, RuntimeError(repr(exc))))

    def _stop_on_signal(self, *_: Any) -> None:
        """SIGTERM: its handler runs on the main thread, maybe inside a status send that holds
        the send lock while the parent is slow to read; the stop sends its own event through
        that lock, so it runs on a thread of its own (in the handler it waited on itself)."""
        threading.Thread(target=self.thread.stop, daemon=True, name="sigterm-stop").start()

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop_on_signal)
        threading.Thread(target=self._serve_requests, daemon=True, name="requests").start()
        self._send(("ready",))
        self._go.wait()  # the parent lets the children of one start join together
        self.thread.start()
        while self.thread.alive:
            self.thread.join(STATUS_INTERVAL_S)
            if self.thread.alive:
                self._send(("status", self._status()))
        if self.global_thread is not None:
            self.global_thread.stop(10.0)
        self._send(("status", self._status()))
        self._send(("exit", _error_info(self.thread.error)))
        return 0 if self.thread.error is None else 1


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


def _error_info(error: BaseException | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {
        "fatal": isinstance(error, FatalThreadError),
        "key": failure_key(error),  # the supervisor's backoff key, computed here once
        "message": str(error),
    }


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops us
    conn = Connection(int(argv[1]))
    init = conn.recv()
    configure_logging(str(init.get("log_level", "INFO")), str(init.get("log_format", "text")))
    try:
        child = _Child(conn, init)
    except Exception as exc:
        logger.exception("stream thread process failed to start")
        info = {"fatal": False, "key": f"start {type(exc).__name__}", "message": str(exc)}
        conn.send(("exit", info))
        return 1
    logger.info(
        "stream thread process running", extra=fields(thread=child.thread.name, index=init["index"])
    )
    return child.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
