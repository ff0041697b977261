"""A bound on the segment files the broker keeps open: descriptors opened lazily, closed by LRU.

Without it every segment of every partition holds a descriptor for the broker's lifetime, so a
topic with more partitions than ``ulimit -n`` makes the broker unable to accept connections or
even to restart. Here a segment holds a :class:`FileHandle`; its descriptor is opened on first
use and closed again when ``log.max.open.files`` others were used more recently. A descriptor in
use (between :meth:`FileHandle.use` entry and exit, on any thread) is pinned and never closed
under its user, so the bound can be exceeded briefly by the number of concurrent users.

Closing a descriptor does not drop written data: the page cache belongs to the file, and on
Linux an ``fsync`` through a later descriptor flushes it too.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = ("FileHandle", "OpenFiles")


class OpenFiles:
    """The LRU of open descriptors, shared by every segment of one broker (thread-safe)."""

    def __init__(self, max_open: int) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be >= 1, got {max_open}")
        self.max_open = max_open
        self._lock = threading.Lock()
        self._open: OrderedDict[FileHandle, int] = OrderedDict()  # least recently used first
        self._pins: dict[FileHandle, int] = {}
        self._closing: set[FileHandle] = set()  # closed while pinned: close at release
        self.opened = 0  # descriptors opened so far (for tests and metrics)

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def handle(self, path: Path, fd: int | None = None) -> FileHandle:
        """A handle for ``path``; ``fd`` (already open, e.g. just created) joins the LRU."""
        h = FileHandle(self, path)
        if fd is not None:
            with self._lock:
                self._open[h] = fd
                self.opened += 1
                self._evict()
        return h

    def acquire(self, h: FileHandle) -> int:
        """Open (or reuse) ``h``'s descriptor and pin it; pair with :meth:`release`."""
        with self._lock:
            fd = self._open.get(h)
            if fd is None:
                fd = self._open_file(h.path)
                self._open[h] = fd
                self.opened += 1
            else:
                self._open.move_to_end(h)
            self._pins[h] = self._pins.get(h, 0) + 1
            self._evict()
            return fd

    def release(self, h: FileHandle) -> None:
        with self._lock:
            left = self._pins[h] - 1
            if left:
                self._pins[h] = left
                return
            del self._pins[h]
            if h not in self._closing:
                return
            self._closing.discard(h)
            fd = self._open.pop(h, None)
        if fd is not None:
            os.close(fd)

    def close(self, h: FileHandle) -> None:
        """Close ``h``'s descriptor now, or when its last user is done (a reader on another
        thread never has its descriptor closed, or its number reused, under it)."""
        with self._lock:
            if h in self._pins:
                self._closing.add(h)
                return
            fd = self._open.pop(h, None)
        if fd is not None:
            os.close(fd)

    def _open_file(self, path: Path) -> int:
        """``os.open``; out of descriptors (sockets took them), close an idle one and retry."""
        try:
            return os.open(path, os.O_RDWR)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            idle = next((h for h in self._open if h not in self._pins), None)
            if idle is None:
                raise
            os.close(self._open.pop(idle))
            return os.open(path, os.O_RDWR)

    def _evict(self) -> None:
        """Close least recently used, unpinned descriptors beyond the bound (lock held)."""
        excess = len(self._open) - self.max_open
        if excess <= 0:
            return
        victims = []
        for h in self._open:
            if h not in self._pins:
                victims.append(h)
                if len(victims) == excess:
                    break
        for h in victims:
            os.close(self._open.pop(h))


class FileHandle:
    """One file's descriptor, open only while the LRU keeps it (identity is the key)."""

    __slots__ = ("_files", "path")

    def __init__(self, files: OpenFiles, path: Path) -> None:
        self._files = files
        self.path = path

    def use(self) -> FileHandle:
        """``with handle.use() as fd``: the descriptor, opened if needed and pinned until the
        block ends (a plain context manager: this is on every read and append)."""
        return self

    def __enter__(self) -> int:
        return self._files.acquire(self)

    def __exit__(self, *exc: object) -> None:
        self._files.release(self)

    def close(self) -> None:
        """Close the descriptor if open; a later :meth:`use` opens the file again."""
        self._files.close(self)
