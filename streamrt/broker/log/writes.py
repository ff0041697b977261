"""Whole writes: ``os.write`` returns short on a nearly full disk before it fails with ``ENOSPC``.

Kept apart from :mod:`swap` and :mod:`index` (which both use it) so neither imports the other.
"""

from __future__ import annotations

import os

__all__ = ("write_all",)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` or raise ``OSError``; a short file must never be renamed
    into place or taken for a whole index."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
