"""Hand-off: a new process of an instance takes over from the running one without a gap.

Two processes of one instance (same ``group.instance.id``, same ``state.dir``) talk over a Unix
domain socket in the application's state directory, ``<state.dir>/<application.id>/.handoff.sock``,
one JSON object per line. The successor does all its slow start-up first (imports, config,
topology, internal topics, and each stream thread's clients started with the group
coordinator found: ``App.prestart``), then asks; the running instance wakes its threads, which
stop processing and commit (producer flushed, data + changelog offset written, input offsets
committed), and answers ``released`` as soon as every thread has committed. The successor joins
at once with the same per-thread instance ids and, KIP-345, gets the same partitions back in
the same generation (no rebalance); its join fences the old members, which commit nothing
more. Meanwhile the old threads close their stores, and the successor opens each task as soon
as its directory lock is free (checkpoint = changelog end: nothing restored). The old process
then closes its clients and exits without a LeaveGroup.

Messages (successor → running instance, then the answers):

- ``{"op": "ping"}`` → ``{"status": "ok", "pid", "instance_id", "topology", "state"}``
- ``{"op": "prepare"}`` → ``{"status": "ok", ...}``: a successor is starting up; the running
  instance writes its stores' memory to disk in the background (it keeps processing), so its
  stop closes them quickly. Best effort: an older instance answers ``error`` (unknown op).
- ``{"op": "handoff", "version": 1, "pid", "instance_id", "topology"}`` →
  ``{"status": "refused", "reason": "topology"|"instance"|"busy"|"version"|"dynamic", "error"}``
  or ``{"status": "accepted", "pid"}`` then ``{"status": "released", "summary"}`` (or
  ``{"status": "failed", "error"}``: the instance stopped, but not cleanly).

Server states: SERVING → HANDING_OFF (one successor; any other is refused ``busy``) → RELEASED.
Successors also hold ``.handoff.lock`` (flock) from before they ask until they serve the socket
themselves, so two successors racing for one instance get one winner and one clear error.
"""

from __future__ import annotations

import enum
import errno
import fcntl
import hashlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamrt.logs import fields
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.instance.handoff_paths import (
    HandoffError,
    lock_path,
    socket_path,
)

__all__ = (
    "PROTOCOL_VERSION",
    "HandoffBusyError",
    "HandoffError",
    "HandoffInterruptedError",
    "HandoffRefusedError",
    "HandoffServer",
    "NoRunningInstanceError",
    "ServerState",
    "SuccessorLock",
    "lock_path",
    "ping",
    "prepare",
    "request_handoff",
    "socket_path",
    "topology_fingerprint",
)

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
_MAX_LINE = 64 * 1024


class NoRunningInstanceError(HandoffError):
    """Nothing serves the socket: no instance runs here, start the ordinary way."""


class HandoffRefusedError(HandoffError):
    """The running instance said no (another topology, another instance, busy); it keeps running."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class HandoffBusyError(HandoffError):
    """Another successor holds the successor lock for this instance."""


class HandoffInterruptedError(HandoffError):
    """The running instance accepted, then died or failed before ``released``.

    Its stores may be partly flushed; the successor starts the ordinary way and restores the tail.
    """

    def __init__(self, message: str, old_pid: int | None) -> None:
        super().__init__(message)
        self.old_pid = old_pid


class ServerState(enum.Enum):
    SERVING = "SERVING"
    HANDING_OFF = "HANDING_OFF"
    RELEASED = "RELEASED"


def topology_fingerprint(topology: Topology, application_id: str) -> str:
    """A hash of what decides tasks and state: sub-topologies, their topics, nodes and stores.

    A successor with another fingerprint would get tasks or stores the running one does not
    have, so it is refused (it needs an ordinary restart, or a new application.id).
    """
    parts = [topology.describe(application_id)]
    for sub in topology.subtopologies(application_id):
        parts.append(f"{sub.id}:{sorted(sub.source_topics)}:{sorted(map(str, sub.stores))}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _recv(reader: Any) -> dict[str, Any] | None:
    """One JSON line, or None at end of stream."""
    line = reader.readline(_MAX_LINE)
    if not line:
        return None
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    return message


class SuccessorLock:
    """``.handoff.lock``: held by the one process that is taking over this instance."""

    def __init__(self, app_state_dir: Path) -> None:
        self.path = lock_path(app_state_dir)
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 100, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            raise HandoffBusyError(
                f"another successor ({holder}) is already taking over this instance "
                f"({self.path.parent}); only one at a time"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid={os.getpid()}".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _connect(path: Path, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        sock.close()
        raise NoRunningInstanceError(f"no instance serves {path}: {exc.strerror}") from None
    except OSError:
        sock.close()
        raise
    return sock


def ping(path: Path, timeout: float = 5.0) -> dict[str, Any]:
    """The running instance's pid, instance id, topology fingerprint and state."""
    return _ask(path, "ping", timeout)


def prepare(path: Path, timeout: float = 5.0) -> dict[str, Any]:
    """Tell the running instance a successor is starting up (see the ``prepare`` op)."""
    return _ask(path, "prepare", timeout)


def _ask(path: Path, op: str, timeout: float) -> dict[str, Any]:
    """One request, one answer."""
    with _connect(path, timeout) as sock, sock.makefile("rb") as reader:
        _send(sock, {"op": op})
        answer = _recv(reader)
    if answer is None:
        raise HandoffError(f"{path}: the instance closed the connection without answering")
    return answer


def request_handoff(
    path: Path,
    *,
    instance_id: str,
    fingerprint: str,
    accept_timeout: float = 10.0,
    release_timeout: float = 120.0,
) -> dict[str, Any]:
    """Ask the instance serving ``path`` to hand over; returns its ``released`` answer.

    Raises NoRunningInstanceError (start normally), HandoffRefusedError (it keeps running: do
    not start), HandoffInterruptedError (it accepted, then died or failed: start normally).
    """
    sock = _connect(path, accept_timeout)
    with sock, sock.makefile("rb") as reader:
        _send(
            sock,
            {
                "op": "handoff",
                "version": PROTOCOL_VERSION,
                "pid": os.getpid(),
                "instance_id": instance_id,
                "topology": fingerprint,
            },
        )
        try:
            answer = _recv(reader)
        except (OSError, ValueError) as exc:
            raise HandoffError(f"{path}: no answer to the hand-off request: {exc!r}") from exc
        if answer is None:
            raise HandoffError(f"{path}: the instance closed the connection without answering")
        if answer.get("status") == "refused":
            reason = str(answer.get("reason", "?"))
            raise HandoffRefusedError(reason, str(answer.get("error", "refused")))
        if answer.get("status") != "accepted":
            raise HandoffError(f"{path}: unexpected answer {answer!r}")
        old_pid = answer.get("pid") if isinstance(answer.get("pid"), int) else None
        sock.settimeout(release_timeout)
        try:
            answer = _recv(reader)
        except (OSError, ValueError) as exc:
            raise HandoffInterruptedError(
                f"instance pid {old_pid} accepted the hand-off, then the connection broke "
                f"({exc!r})",
                old_pid,
            ) from exc
        if answer is None:
            raise HandoffInterruptedError(
                f"instance pid {old_pid} accepted the hand-off, then closed the connection "
                "before releasing its state (killed?)",
                old_pid,
            )
        if answer.get("status") == "failed":
            raise HandoffInterruptedError(
                f"instance pid {old_pid} failed to stop cleanly: {answer.get('error')}", old_pid
            )
        if answer.get("status") != "released":
            raise HandoffInterruptedError(f"instance pid {old_pid}: unexpected {answer!r}", old_pid)
        return {**answer, "pid": old_pid}


Release = Callable[[], dict[str, Any]]


class HandoffServer:
    """The running instance's end: answers pings and lets one successor take over.

    ``release()`` stops the app for the hand-off (final commits; the stores close and their
    locks free right after, no LeaveGroup) and returns a summary; ``on_done(ok)`` runs after
    the answer was sent, so the process can finish closing and exit. The socket file is
    unlinked before ``released`` is sent: the successor binds its own socket at the same path
    afterwards and must not lose it to our exit.
    """

    def __init__(
        self,
        path: Path,
        *,
        instance_id: str,
        fingerprint: str,
        release: Release,
        on_done: Callable[[bool], None],
        state: Callable[[], str] = lambda: "RUNNING",
        prepare: Release = dict,
    ) -> None:
        self.path = Path(path)
        self.instance_id = instance_id
        self.fingerprint = fingerprint
        self._release = release
        self._on_done = on_done
        self._app_state = state
        self._prepare = prepare
        self.state = ServerState.SERVING
        self._state_lock = threading.Lock()
        self._successor: int | None = None
        self._sock: socket.socket | None = None
        self._inode: int | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def start(self) -> None:
        """Bind (replacing a stale socket file nobody answers on) and serve in a thread."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            try:
                ping(self.path, timeout=2.0)
            except (NoRunningInstanceError, HandoffError, OSError, ValueError):
                self.path.unlink(missing_ok=True)  # stale: its process is gone
            else:
                raise HandoffError(
                    f"another process serves {self.path}: is this instance already running?"
                )
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        sock.listen(8)
        sock.settimeout(0.2)
        self._sock = sock
        self._inode = os.stat(self.path).st_ino
        self._thread = threading.Thread(target=self._serve, name="handoff-server", daemon=True)
        self._thread.start()
        logger.info("hand-off socket ready", extra=fields(path=str(self.path)))

    def close(self) -> None:
        self._closed.set()
        self._unlink()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2.0)

    def _unlink(self) -> None:
        """Remove our socket file, never a successor's that replaced it."""
        try:
            if self._inode is not None and os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
        except FileNotFoundError:
            pass
        self._inode = None

    def _serve(self) -> None:
        while not self._closed.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EBADF, errno.EINVAL) or self._closed.is_set():
                    return
                logger.warning("hand-off accept failed", extra=fields(error=repr(exc)))
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(10.0)
        with conn, conn.makefile("rb") as reader:
            try:
                request = _recv(reader)
            except (OSError, ValueError) as exc:
                self._answer(conn, {"status": "error", "error": f"bad request: {exc}"})
                return
            if request is None:
                return
            op = request.get("op")
            if op == "ping":
                self._answer(
                    conn,
                    {
                        "status": "ok",
                        "pid": os.getpid(),
                        "instance_id": self.instance_id,
                        "topology": self.fingerprint,
                        "state": self._app_state(),
                        "handoff": self.state.value,
                    },
                )
            elif op == "prepare":
                self._prepare_for(conn)
            elif op == "handoff":
                self._handoff(conn, request)
            else:
                self._answer(conn, {"status": "error", "error": f"unknown op {op!r}"})

    def _prepare_for(self, conn: socket.socket) -> None:
        if self.state is not ServerState.SERVING:
            self._answer(conn, {"status": "ok", "handoff": self.state.value})
            return
        try:
            summary = self._prepare()
        except Exception as exc:  # best effort: the hand-off works without it, only slower
            logger.warning("hand-off: preparing failed", extra=fields(error=repr(exc)))
            self._answer(conn, {"status": "error", "error": repr(exc)})
            return
        logger.info("hand-off: a successor is starting, stores persisted", extra=fields(**summary))
        self._answer(conn, {"status": "ok", **summary})

    def _answer(self, conn: socket.socket, message: dict[str, Any]) -> bool:
        try:
            _send(conn, message)
            return True
        except OSError as exc:
            logger.warning("hand-off: could not answer", extra=fields(error=repr(exc)))
            return False

    def _refusal(self, request: dict[str, Any]) -> tuple[str, str] | None:
        pid = request.get("pid")
        if request.get("version") != PROTOCOL_VERSION:
            return "version", f"protocol version {request.get('version')!r} is not supported"
        if request.get("instance_id") != self.instance_id:
            return "instance", (
                f"this socket serves instance {self.instance_id!r}, not "
                f"{request.get('instance_id')!r}"
            )
        if request.get("topology") != self.fingerprint:
            return "topology", (
                f"successor pid {pid} has another topology (fingerprint "
                f"{request.get('topology')}, running {self.fingerprint}): its tasks and stores "
                "would differ; refused, instance keeps running (restart it the ordinary way)"
            )
        return None

    def _handoff(self, conn: socket.socket, request: dict[str, Any]) -> None:
        pid = request.get("pid")
        refusal = self._refusal(request)
        if refusal is None:
            with self._state_lock:
                if self.state is not ServerState.SERVING:
                    refusal = (
                        "busy",
                        (
                            f"successor pid {self._successor} is already taking over "
                            f"(state {self.state.value}); only one at a time"
                        ),
                    )
                else:
                    self.state = ServerState.HANDING_OFF
                    self._successor = pid if isinstance(pid, int) else None
        if refusal is not None:
            reason, message = refusal
            logger.warning(
                "hand-off refused", extra=fields(successor=pid, reason=reason, error=message)
            )
            self._answer(conn, {"status": "refused", "reason": reason, "error": message})
            return
        began = time.monotonic()
        logger.info("hand-off accepted: stopping for the successor", extra=fields(successor=pid))
        if not self._answer(conn, {"status": "accepted", "pid": os.getpid()}):
            with self._state_lock:  # the successor is gone before we stopped: keep running
                self.state = ServerState.SERVING
                self._successor = None
            logger.warning("hand-off aborted: the successor went away", extra=fields(successor=pid))
            return
        try:
            summary = self._release()
        except Exception as exc:
            logger.error("hand-off: stopping failed", extra=fields(error=repr(exc)))
            self._closed.set()
            self._unlink()
            self._answer(conn, {"status": "failed", "error": repr(exc)})
            self._on_done(False)
            return
        self._closed.set()
        self._unlink()
        self.state = ServerState.RELEASED
        summary = {**summary, "stop_ms": round((time.monotonic() - began) * 1000, 1)}
        sent = self._answer(conn, {"status": "released", "summary": summary})
        logger.info(
            "hand-off: released to the successor",
            extra=fields(successor=pid, answered=sent, **summary),
        )
        self._on_done(True)
