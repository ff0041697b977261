"""Directory locks so that one task directory has exactly one owner.

``flock`` locks belong to an open file description, so two threads of one process conflict
just like two processes do (POSIX ``lockf`` locks would not). The holder's pid and thread name
are written into the lock file so a refusal can say who holds it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from types import TracebackType

from streamrt.errors import StreamrtError

__all__ = ("DirectoryLock", "StateLockedError")

LOCK_FILE = ".lock"


class StateLockedError(StreamrtError):
    """Another thread or process owns this state directory."""


class DirectoryLock:
    """An exclusive, non-blocking lock on ``<directory>/.lock``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            raise StateLockedError(
                f"state directory {self.directory} is locked by another owner ({holder}); "
                "is another instance running with the same state.dir?"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid={os.getpid()} thread={threading.current_thread().name}".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> DirectoryLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
