"""Where a hand-off's socket and lock live, and the error every hand-off step raises.

The socket belongs in ``<state.dir>/<application.id>/``: both processes of a hand-off know that
directory, and its permissions guard who may talk to the running instance. A Unix socket's path
is limited to 107 bytes on Linux (``sun_path`` is 108 with the NUL), and state directories on
mounted volumes or under a test runner's temp tree are often longer. Such a socket goes into a
private per-user directory under the temp dir (``streamrt-<uid>``, mode 0700, owned by us),
named by a hash of the state directory, so the successor computes the same path.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from streamrt.errors import StreamrtError

__all__ = ("LOCK_NAME", "SOCKET_NAME", "HandoffError", "lock_path", "socket_path")

SOCKET_NAME = ".handoff.sock"
LOCK_NAME = ".handoff.lock"
_UNIX_PATH_MAX = 107  # sun_path is 108 bytes on Linux, one for the NUL


class HandoffError(StreamrtError):
    """The hand-off did not happen; the message says why and what the successor should do."""


def socket_path(app_state_dir: Path) -> Path:
    """``<state.dir>/<application.id>/.handoff.sock``, or its short stand-in if that is too long."""
    path = Path(app_state_dir) / SOCKET_NAME
    if _fits(path):
        return path
    digest = hashlib.sha256(os.fsencode(str(Path(app_state_dir).resolve()))).hexdigest()[:32]
    short = _private_dir() / f"{digest}.sock"
    if not _fits(short):
        raise HandoffError(
            f"hand-off socket path {path} is longer than {_UNIX_PATH_MAX} bytes (a Unix socket "
            f"limit), and so is its stand-in {short}; use a shorter state.dir or TMPDIR"
        )
    return short


def lock_path(app_state_dir: Path) -> Path:
    return Path(app_state_dir) / LOCK_NAME


def _fits(path: Path) -> bool:
    return len(os.fsencode(str(path))) <= _UNIX_PATH_MAX


def _private_dir() -> Path:
    """``$TMPDIR/streamrt-<uid>``: created 0700; refused if someone else could reach into it."""
    uid = os.getuid()
    folder = Path(tempfile.gettempdir()) / f"streamrt-{uid}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        raise HandoffError(
            f"{folder} (for hand-off sockets whose state.dir path is too long) must be a "
            f"directory owned by uid {uid} with mode 0700; remove it or use a shorter state.dir"
        )
    return folder
