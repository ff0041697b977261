"""A restore killed midway (SIGKILL) resumes from what its files hold and ends complete and exact.

Restoration writes without the WAL, so a crash loses the records written since the last
memtable flush; the flushes keep data and changelog offset together, so the store reopens at an
offset whose data is all there, and restoring again from it gives every record exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from streamrt.state import ROCKS_DB, StateManager, TopicPartition

CHANGELOG = TopicPartition("app-profiles-changelog", 0)
BATCH = 1000
TOTAL = 95_500  # not a multiple of the flush interval: a tail is unflushed at the kill


def _record(offset: int) -> tuple[bytes, bytes]:
    return f"k{offset:08d}".encode(), f"v{offset}-".encode() * 12


def _manager(directory: Path) -> StateManager:
    state = StateManager("0_0", directory)
    state.register("profiles", CHANGELOG, ROCKS_DB)
    return state


def _restore(state: StateManager, start: int, end: int) -> None:
    for first in range(start, end, BATCH):
        last = min(first + BATCH, end)
        state.restore_batch(CHANGELOG, [_record(o) for o in range(first, last)], last)


_CHILD = """
import os, signal, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import streamrt.state.rocksdb as rocksdb
rocksdb.UNLOGGED_FLUSH_RECORDS = 10_000
from state.test_restore_crash import TOTAL, _manager, _restore
state = _manager(Path({directory!r}))
state.open()
_restore(state, 0, TOTAL)
print("written", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_restore_killed_midway_restarts_from_its_flushed_offset_and_ends_exact(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "app" / "0_0"
    tests = str(Path(__file__).resolve().parents[1])
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(tests=tests, directory=str(directory))],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": tests},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert "written" in child.stdout

    state = _manager(directory)
    position = state.open()[CHANGELOG]
    try:
        # the unflushed tail was lost (written without the WAL), a flushed prefix was kept
        assert position is not None and 0 < position < TOTAL
        assert position % BATCH == 0
        store = state.store("profiles")
        for offset in range(position):  # everything up to the recorded offset is there
            key, value = _record(offset)
            assert store.get(key) == value, offset
        _restore(state, position, TOTAL)  # the restarted restore
        state.mark_restored(CHANGELOG, TOTAL)
        assert state.position(CHANGELOG) == TOTAL
        assert dict(store.items()) == dict(_record(o) for o in range(TOTAL))
    finally:
        state.close()
    reopened = _manager(directory)  # and the restored store is durable
    try:
        assert reopened.open()[CHANGELOG] == TOTAL
        assert sum(1 for _ in reopened.store("profiles").items()) == TOTAL
    finally:
        reopened.close()
