"""The end of a restore does not wait for its WAL-less data to reach files, and loses nothing.

A restore writes RocksDB without the WAL. Its end (``mark_restored``) and the commits after it
ask one background memtable flush and are written without the WAL until it lands, so a crash
before then reopens the store at an offset whose data is all there and the restore runs again;
once it landed, commits use the WAL again and survive a SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from streamrt.state import ROCKS_DB, StateManager, TopicPartition

CHANGELOG = TopicPartition("app-profiles-changelog", 0)
TOTAL = 1_000  # restored records of 2.3 KB


def _record(offset: int) -> tuple[bytes, bytes]:
    return f"k{offset:08d}".encode(), f"{offset:08d}".encode() * 290


def _manager(directory: Path) -> StateManager:
    state = StateManager("0_0", directory)
    state.register("profiles", CHANGELOG, ROCKS_DB)
    return state


def _restore(state: StateManager, start: int, end: int) -> None:
    for first in range(start, end, 250):
        last = min(first + 250, end)
        state.restore_batch(CHANGELOG, [_record(o) for o in range(first, last)], last)


_CHILD = """
import os, signal, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from state.test_restore_unlogged import CHANGELOG, TOTAL, _manager, _record, _restore
state = _manager(Path({directory!r}))
state.open()
_restore(state, 0, TOTAL)
state.mark_restored(CHANGELOG, TOTAL)
store = state.store("profiles")
store.put(*_record(TOTAL))  # the first commit after the restore: its record is at TOTAL
state.flush({{CHANGELOG: TOTAL + 1}})
if {wait_for_files!r}:
    deadline = time.monotonic() + 120
    while store.unlogged:  # the app commits on: each may ask the next background flush
        assert time.monotonic() < deadline, "the background flush never landed"
        time.sleep(0.05)
        state.flush({{}})
    store.put(*_record(TOTAL + 1))  # a commit with the WAL
    state.flush({{CHANGELOG: TOTAL + 2}})
print("committed", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _run_child(directory: Path, *, wait_for_files: bool) -> None:
    tests = str(Path(__file__).resolve().parents[1])
    code = _CHILD.format(tests=tests, directory=str(directory), wait_for_files=wait_for_files)
    child = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": tests},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert "committed" in child.stdout


def test_a_crash_before_the_restores_flush_lands_restores_again_and_loses_nothing(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "app" / "0_0"
    _run_child(directory, wait_for_files=False)

    state = _manager(directory)
    position = state.open()[CHANGELOG]
    try:
        # the end of the restore did not wait for its data to reach files, and the commit
        # after it was not written with the WAL ahead of that data: the kill came before any
        # commit saw the flush land, so the offsets on files are behind (here: none)
        assert position is None or position < TOTAL + 1
        store = state.store("profiles")
        for offset in range(position or 0):  # what the recorded offset claims is all there
            key, value = _record(offset)
            assert store.get(key) == value, offset
        _restore(state, position or 0, TOTAL + 1)  # the restart restores again
        state.mark_restored(CHANGELOG, TOTAL + 1)
        assert dict(store.items()) == dict(_record(o) for o in range(TOTAL + 1))
    finally:
        state.close()
    reopened = _manager(directory)
    try:
        assert reopened.open()[CHANGELOG] == TOTAL + 1
        assert sum(1 for _ in reopened.store("profiles").items()) == TOTAL + 1
    finally:
        reopened.close()


def test_once_the_flush_landed_commits_use_the_wal_and_survive_a_crash(tmp_path: Path) -> None:
    directory = tmp_path / "app" / "0_0"
    _run_child(directory, wait_for_files=True)

    state = _manager(directory)
    try:
        assert state.open()[CHANGELOG] == TOTAL + 2  # the last commit was replayed from the WAL
        items = dict(state.store("profiles").items())
        assert items == dict(_record(o) for o in range(TOTAL + 2))
    finally:
        state.close()
