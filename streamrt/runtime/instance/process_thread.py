"""ProcessStreamThread: a stream thread in a child process (``stream.thread.mode=process``).

Why: a stream thread is Python code under one GIL, so two threads of one process do about the
work of one (docs/benchmarks.md). In process mode thread ``n`` of instance ``web-1`` runs in its
own child process (:mod:`streamrt.runtime.instance.process_child`) and joins the group as the
same static member ``web-1-thread-n`` it would be as a thread, with the same state directory (task
directories are ``flock``-ed, so two processes never own one). The parent keeps the App: it
supervises the children through these handles exactly as it supervises threads (same backoff,
same ERROR rules), serves the one REST endpoint and aggregates state and metrics.

The handle satisfies :class:`~streamrt.runtime.instance.thread_handle.ThreadHandle`, as
:class:`~streamrt.runtime.engine.thread.thread.StreamThread` does. Its state, metadata and
assignment are the child's, pushed over a socket pair (pickled messages,
:class:`multiprocessing.connection.Connection`) with every event and twice a second;
interactive queries are sent to the child as
:class:`~streamrt.runtime.instance.store_reads.StoreRead` and answered there on the owning
thread.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import itertools
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from streamrt.errors import ConfigError, StreamrtError
from streamrt.logs import fields
from streamrt.runtime.engine.assignment.assignor import AssignmentInfo
from streamrt.runtime.engine.thread.thread import FatalThreadError
from streamrt.runtime.exception_handlers import ErrorStats
from streamrt.runtime.instance.store_reads import StoreNotReadyError, StoreRead
from streamrt.runtime.metadata import ThreadMetadata, ThreadState

__all__ = (
    "PROCESS_MODE",
    "THREAD_MODE",
    "ChildExitedError",
    "ChildFatalError",
    "ChildLaunch",
    "ChildThreadError",
    "ChildrenErrorStats",
    "ProcessStreamThread",
    "find_app_spec",
    "require_app_spec",
)

logger = logging.getLogger(__name__)

THREAD_MODE = "thread"
PROCESS_MODE = "process"
STATUS_INTERVAL_S = 0.5  # how often a child pushes its thread's state and counters
KILL_GRACE_S = 5.0  # after a join timeout: SIGTERM, then SIGKILL after this long


class ChildThreadError(StreamrtError):
    """The child's stream thread died; ``key`` groups deaths for the supervisor's backoff
    (the same record, or the same error), as the App does for a thread."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class ChildFatalError(FatalThreadError):
    """The child's stream thread hit a fatal error (e.g. FENCED_INSTANCE_ID)."""


class ChildExitedError(ChildThreadError):
    """The child process ended without reporting (killed, or crashed in the interpreter)."""


@dataclass(frozen=True, slots=True)
class ChildLaunch:
    """What every child of an instance is started with."""

    app_spec: str  # MODULE:ATTR of the App, imported by the child
    settings: Mapping[str, Any]  # the parent's settings (the picklable ones)
    application_id: str
    instance_id: str
    static: bool
    emit: Callable[..., None]  # the App's emit(type, thread_index, **fields)
    log_level: str = "INFO"
    log_format: str = "text"
    env: Mapping[str, str] = field(default_factory=dict)  # extra environment of the child


def find_app_spec(app: object) -> str | None:
    """``module:attr`` of a module-level variable holding ``app`` (None if there is none).

    A child imports the app by this name; ``__main__`` cannot be imported by name, so a
    script's app is not found (run it with ``streamrt run MODULE:ATTR`` instead).
    """
    for name, module in list(sys.modules.items()):
        if name in ("__main__", "__mp_main__") or module is None:
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            if value is app and not attr.startswith("_"):
                return f"{name}:{attr}"
    return None


def require_app_spec(app: object, given: str | None) -> str:
    """MODULE:ATTR a stream thread process imports to get ``app``'s topology: ``given``
    (``app.app_spec``, which ``streamrt run`` sets), else found among the loaded modules."""
    spec = given or find_app_spec(app)
    if spec is None:
        raise ConfigError(
            "stream.thread.mode=process: each stream thread process imports the app, but "
            "this App is not a module-level variable of an importable module; run it with "
            "`streamrt run MODULE:ATTR` or set app.app_spec = 'MODULE:ATTR'"
        )
    return spec


def picklable_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a child can receive; others (e.g. a handler object given in code) come
    from the app's own module when the child imports it."""
    out = {}
    for key, value in settings.items():
        try:
            pickle.dumps(value)
        except Exception:
            logger.warning("setting not passed to child processes", extra=fields(key=key))
            continue
        out[key] = value
    return out


def child_pythonpath() -> str:
    """The parent's import path, so the child imports the same app module and streamrt."""
    paths = [os.getcwd() if p == "" else p for p in sys.path]
    return os.pathsep.join(dict.fromkeys(p for p in paths if os.path.isdir(p)))


class ProcessStreamThread:
    """Responsibilities: start and stop one child process, mirror its thread's state, relay
    interactive queries to it."""

    def __init__(self, launch: ChildLaunch, index: int) -> None:
        self.launch = launch
        self.index = index
        instance = launch.instance_id
        self.name = f"{instance}-thread-{index}"
        self.thread_instance_id = self.name if launch.static else None
        self.client_id = f"{launch.application_id}-{instance}-thread-{index}"
        self.state = ThreadState.CREATED
        self.error: BaseException | None = None
        self.assignment_info: AssignmentInfo | None = None
        self.tasks: tuple[str, ...] = ()
        self.pid: int | None = None
        self.error_counts: tuple[dict[tuple[str, str], int], dict[str, int]] = ({}, {})
        self.committed = threading.Event()  # the child's final commit is done, or it ended
        self.stopped_cleanly = False  # the child's final commit succeeded
        self._member_id: str | None = None
        self._metadata: ThreadMetadata | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._send_lock = threading.Lock()
        self._done = threading.Event()
        self._stop_sent = False
        self._replies: dict[int, concurrent.futures.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()  # the child imported the app and waits for "go"
        self._hold = False
        self._go_lock = threading.Lock()
        self._go_sent = False

    # -- the StreamThread surface the App uses -------------------------------------------------

    def start(self, hold: bool = False) -> None:
        """Start the child. With ``hold`` it joins the group only on :meth:`release`, so the
        children of one start join together (one rebalance), as threads do; otherwise as soon
        as it has imported the app."""
        self._hold = hold
        parent_sock, child_sock = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": child_pythonpath(), **self.launch.env}
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "streamrt.runtime.instance.process_child",
                    str(child_sock.fileno()),
                ],
                pass_fds=(child_sock.fileno(),),
                env=env,
            )
        finally:
            child_sock.close()
        self.pid = self._proc.pid
        self._conn = Connection(parent_sock.detach())
        self._send(
            {
                "app_spec": self.launch.app_spec,
                "settings": dict(self.launch.settings),
                "instance_id": self.launch.instance_id,
                "static": self.launch.static,
                "index": self.index,
                "log_level": self.launch.log_level,
                "log_format": self.launch.log_format,
            }
        )
        logger.info("started a stream thread process", extra=fields(thread=self.name, pid=self.pid))
        self._reader = threading.Thread(target=self._read, name=f"{self.name}-process", daemon=True)
        self._reader.start()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the child is ready to join (or gone); False on timeout."""
        deadline = time.monotonic() + timeout
        while not (self._ready.is_set() or self._done.is_set()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def expect_tasks(self, task_ids: Collection[str]) -> None:
        """No hand-off in process mode (refused up front): nothing to open ahead."""

    def release(self) -> None:
        """Let a held child join the group (at once if it is ready, else when it is)."""
        self._hold = False
        if self._ready.is_set():
            self._go()

    def _go(self) -> None:
        with self._go_lock:
            if self._go_sent:
                return
            self._go_sent = True
        with contextlib.suppress(OSError, ValueError):
            self._send(("go",))

    def stop(self) -> None:
        """Ask the child to commit and stop (as a thread's stop: no LeaveGroup)."""
        if self._stop_sent:
            return
        self._stop_sent = True
        with contextlib.suppress(OSError, ValueError):  # the child is gone already
            self._send(("stop",))

    def join(self, timeout: float | None = None) -> None:
        """Wait for the child to exit; past ``timeout`` it is terminated, then killed, so no
        child outlives its supervisor."""
        if self._done.wait(timeout) or self._proc is None:
            return
        logger.warning("stream thread process did not stop in time", extra=fields(pid=self.pid))
        for kill, grace in ((self._proc.terminate, KILL_GRACE_S), (self._proc.kill, KILL_GRACE_S)):
            kill()
            if self._done.wait(grace):
                return

    @property
    def alive(self) -> bool:
        return self._proc is not None and not self._done.is_set()

    @property
    def member_id(self) -> str | None:
        return self._member_id

    def owns(self, task_id: str) -> bool:
        return task_id in self.tasks

    def metadata(self) -> ThreadMetadata:
        if self._metadata is not None:
            return self._metadata
        return ThreadMetadata(
            thread_name=self.name,
            thread_index=self.index,
            thread_instance_id=self.thread_instance_id,
            client_id=self.client_id,
            state=self.state,
            active_tasks=(),
            restoring_tasks=(),
            topic_partitions=(),
            rebalances=0,
            records_processed=0,
            records_restored=0,
            bytes_restored=0,
            restore_time_ms=0.0,
        )

    def persist_stores(self, timeout: float = 5.0) -> int:
        """Nothing to ask: a hand-off is refused in process mode (no tasks asked)."""
        return 0

    def read_store(self, task_id: str, read: StoreRead, timeout: float) -> Any:
        """Run ``read`` in the child on the thread that owns ``task_id``."""
        request_id = next(self._ids)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._replies[request_id] = future
        try:
            try:
                self._send(("read", request_id, task_id, read, timeout))
            except (OSError, ValueError) as exc:
                raise StoreNotReadyError(f"task {task_id}: {self.name} is gone: {exc}") from exc
            try:
                return future.result(timeout + 1.0)
            except concurrent.futures.TimeoutError as exc:
                raise StoreNotReadyError(f"task {task_id}: {self.name} did not answer") from exc
        finally:
            self._replies.pop(request_id, None)

    # -- the connection ------------------------------------------------------------------------

    def _send(self, message: Any) -> None:
        conn = self._conn
        if conn is None:
            raise ValueError("not started")
        with self._send_lock:
            conn.send(message)

    def _read(self) -> None:
        """The reader thread: apply the child's messages until it goes away, then end."""
        assert self._conn is not None and self._proc is not None
        outcome = _Exit()
        try:
            while True:
                self._on_message(self._conn.recv(), outcome)
        except (EOFError, OSError):
            pass
        except Exception:
            logger.exception("bad message from a stream thread process", extra=fields(pid=self.pid))
        code = self._proc.wait()
        self._conn.close()
        self._ended(code, outcome)

    def _on_message(self, message: Any, outcome: _Exit) -> None:
        kind = message[0]
        if kind == "event":
            _, type_, index, kv, status = message
            self._apply(status)
            self.launch.emit(type_, index, **kv)
        elif kind == "ready":
            self._ready.set()
            if not self._hold:
                self._go()
        elif kind == "status":
            self._apply(message[1])
        elif kind == "reply":
            self._on_reply(*message[1:])
        elif kind == "exit":
            outcome.exited = True
            outcome.reported = _child_error(message[1])

    def _on_reply(self, request_id: int, ok: bool, payload: Any) -> None:
        future = self._replies.get(request_id)
        if future is None or future.done():
            return
        if ok:
            future.set_result(payload)
        else:
            future.set_exception(payload)

    def _ended(self, code: int, outcome: _Exit) -> None:
        """The child is gone: its error (or why it exited), pending reads fail, DEAD."""
        reported = outcome.reported
        if reported is None and not (outcome.exited and code == 0):
            reported = ChildExitedError(
                f"stream thread process {self.name} (pid {self.pid}) exited with code {code}",
                key=f"process exit {code}",
            )
        self.error = reported
        for future in list(self._replies.values()):
            if not future.done():
                future.set_exception(StoreNotReadyError(f"{self.name} stopped"))
        old = self.state
        if old is not ThreadState.DEAD:
            self.state = ThreadState.DEAD
            self._metadata = None
            self.tasks = ()
            self.launch.emit("thread_state", self.index, old=old.name, new=ThreadState.DEAD.name)
        logger.info(
            "stream thread process exited",
            extra=fields(thread=self.name, pid=self.pid, code=code, error=str(reported or "")),
        )
        self.committed.set()
        self._done.set()

    def _apply(self, status: Mapping[str, Any]) -> None:
        self._metadata = status["metadata"]
        self._member_id = status["member_id"]
        self.assignment_info = status["assignment_info"] or self.assignment_info
        self.tasks = tuple(status["tasks"])
        self.error_counts = status["errors"]
        self.state = status["metadata"].state
        self.stopped_cleanly = bool(status.get("stopped_cleanly", False))
        if status.get("committed"):
            self.committed.set()


@dataclass(slots=True)
class _Exit:
    """What the child said about its end: that it exited, and with which error."""

    exited: bool = False
    reported: BaseException | None = None


def _child_error(info: Mapping[str, Any] | None) -> BaseException | None:
    if info is None:
        return None
    message = str(info["message"])
    if info["fatal"]:
        return ChildFatalError(message)
    return ChildThreadError(message, key=str(info["key"]))


class ChildrenErrorStats(ErrorStats):
    """The record-handler counters of every child process, summed (for ``/metrics``)."""

    def __init__(self, threads: Callable[[], list[ProcessStreamThread]]) -> None:
        super().__init__()
        self._threads = threads

    def snapshot(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        skipped: dict[tuple[str, str], int] = {}
        dead: dict[str, int] = {}
        for thread in self._threads():
            by_handler, by_stage = thread.error_counts
            for k, n in by_handler.items():
                skipped[k] = skipped.get(k, 0) + n
            for stage, n in by_stage.items():
                dead[stage] = dead.get(stage, 0) + n
        return skipped, dead


def load_app_object(spec: str) -> Any:
    """Import ``module:attr`` (used by the child)."""
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr or "app")
