"""Crash-safe replacement of segments by a cleaned segment (write, fsync, rename), and its recovery.

Protocol, for old segments ``old_bases`` replaced by one cleaned segment with base ``new_base``
(which is ``old_bases[0]``, so offsets and file names stay put):

1. The cleaner writes ``<new_base>.{log,index,timeindex}.cleaned`` and fsyncs them.
2. ``cleaner-swap.json`` (the plan: new base and old bases) is written atomically.
3. The ``.cleaned`` files are renamed to ``.swap``, the ``.log`` last; the directory is fsynced.
   A ``.log.swap`` file is the commit point: from here on the swap is redone after a crash.
4. The old segments are deleted, then each ``.swap`` is renamed over its final name (indices
   first, ``.log`` last), the directory fsynced and the plan removed.

:func:`complete_interrupted_swap` runs at open: without a ``.log.swap`` it discards leftovers
(the old segments are intact); with one it finishes step 4, or stops the start if the plan is
lost or damaged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from streamrt.broker.log.segment import segment_paths
from streamrt.broker.log.storage_errors import CorruptMetadataError
from streamrt.broker.log.writes import write_all

__all__ = (
    "commit_swap",
    "complete_interrupted_swap",
    "fsync_dir",
    "write_atomically",
)

SWAP_PLAN = "cleaner-swap.json"
_CLEANED = ".cleaned"
_SWAP = ".swap"


def fsync_dir(directory: Path) -> None:
    """Make renames and new files in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Write to a temp file, fsync, rename over ``path``, fsync the directory; on a failed
    write the temp file is removed and ``path`` keeps its old content."""
    tmp = path.with_name(_tmp_name(path.name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except OSError:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _tmp_name(name: str) -> str:
    """``<name>.tmp``, or for a name too long for that (a 249-character topic's metadata file)
    a shortened name with a digest of the whole, so the temp file stays within 255 bytes."""
    if len(name.encode()) <= 251:
        return name + ".tmp"
    return f"{name[:200]}.{hashlib.sha256(name.encode()).hexdigest()[:16]}.tmp"


def commit_swap(directory: Path, new_base: int, old_bases: Sequence[int]) -> None:
    """Steps 2-3: record the plan and rename ``.cleaned`` → ``.swap`` (commit point)."""
    plan = {"new_base": new_base, "old_bases": list(old_bases)}
    write_atomically(directory / SWAP_PLAN, json.dumps(plan).encode())
    log, index, time_index = segment_paths(directory, new_base)
    for final in (index, time_index, log):
        os.replace(_with(final, _CLEANED), _with(final, _SWAP))
    fsync_dir(directory)


def finish_swap(directory: Path, new_base: int, old_bases: Sequence[int]) -> None:
    """Step 4: delete the old segments and move the swap files into place."""
    for base in old_bases:
        if base == new_base:
            continue  # replaced by the rename below
        for path in segment_paths(directory, base):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    log, index, time_index = segment_paths(directory, new_base)
    for final in (index, time_index, log):
        with contextlib.suppress(FileNotFoundError):
            os.replace(_with(final, _SWAP), final)
    fsync_dir(directory)
    with contextlib.suppress(FileNotFoundError):
        (directory / SWAP_PLAN).unlink()


def complete_interrupted_swap(directory: Path) -> None:
    """Roll an interrupted swap forward (``.log.swap`` present) or back (otherwise).

    A committed swap whose plan is lost or damaged stops the start: the old segments may be
    deleted already, so the ``.swap`` files may hold the only copy of their records."""
    plan_path = directory / SWAP_PLAN
    if list(directory.glob(f"*.log{_SWAP}")):
        new_base, old_bases = _read_plan(plan_path)
        finish_swap(directory, new_base, old_bases)
    for leftover in (*directory.glob(f"*{_CLEANED}"), *directory.glob(f"*{_SWAP}")):
        leftover.unlink()
    with contextlib.suppress(FileNotFoundError):
        plan_path.unlink()
    for tmp in directory.glob("*.tmp"):
        tmp.unlink()


def _read_plan(path: Path) -> tuple[int, list[int]]:
    """The committed plan's new base and old bases, or :class:`CorruptMetadataError`."""
    remedy = (
        "restore it, or check which old segments are gone and rename the .swap files to "
        "their names without .swap"
    )
    try:
        plan = json.loads(path.read_bytes())
        new_base, old_bases = plan["new_base"], plan["old_bases"]
    except FileNotFoundError:
        raise CorruptMetadataError(path, "missing, but a .log.swap file is there", remedy) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptMetadataError(path, f"unreadable ({exc!r})", remedy) from None
    if not isinstance(old_bases, list) or not all(type(b) is int for b in [new_base, *old_bases]):
        raise CorruptMetadataError(path, f"bases are not integers: {plan!r}", remedy)
    return new_base, list(old_bases)


def _with(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)
