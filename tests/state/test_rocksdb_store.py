"""RocksDBStore: data and changelog offset in one batch; rebuild when corrupt; locks."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from streamrt.state import DirectoryLock, RocksDBStore, StateLockedError


def open_store(path: Path) -> RocksDBStore:
    store = RocksDBStore("s", path)
    store.open()
    return store


def test_staged_writes_are_readable_but_reach_disk_only_on_flush(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    store.put(b"a", b"1")
    assert store.get(b"a") == b"1"
    store.close()  # no flush: the changelog would cover it
    store = open_store(tmp_path / "s")
    assert store.get(b"a") is None
    assert store.changelog_offset() is None
    store.close()


def test_flush_writes_data_and_offset_together(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    store.put(b"a", b"1")
    store.put(b"b", b"2")
    store.flush(changelog_offset=2)
    store.delete(b"a")
    store.flush(changelog_offset=3)
    store.close()
    store = open_store(tmp_path / "s")
    assert list(store.items()) == [(b"b", b"2")]
    assert store.changelog_offset() == 3
    store.close()


def test_flush_without_offset_keeps_the_previous_checkpoint(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    store.flush(changelog_offset=7)
    store.put(b"k", b"v")
    store.flush(changelog_offset=None)
    assert store.changelog_offset() == 7
    store.close()


def test_restore_applies_tombstones_and_advances_offset(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    store.write_batch([(b"a", b"1"), (b"b", b"2"), (b"a", None)], next_offset=10)
    assert list(store.items()) == [(b"b", b"2")]
    assert store.changelog_offset() == 10
    store.close()


def test_corrupt_store_is_rebuilt_empty(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    store.put(b"a", b"1")
    store.flush(5)
    store.close()
    for f in (tmp_path / "s").iterdir():
        if f.name.startswith("CURRENT"):
            f.write_text("garbage\n")
    store = open_store(tmp_path / "s")
    assert store.changelog_offset() is None  # full restore from the changelog follows
    assert list(store.items()) == []
    store.close()


def test_lock_refuses_a_second_owner_in_the_same_process(tmp_path: Path) -> None:
    with (
        DirectoryLock(tmp_path / "0_1"),
        pytest.raises(StateLockedError, match="locked by another owner"),
    ):
        DirectoryLock(tmp_path / "0_1").acquire()
    DirectoryLock(tmp_path / "0_1").acquire()  # released: free again


def _try_lock(path: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    try:
        DirectoryLock(Path(path)).acquire()
        out.put("acquired")
    except StateLockedError as exc:
        out.put(str(exc))


def test_lock_held_by_another_process_is_reported_with_its_pid(tmp_path: Path) -> None:
    import os

    with DirectoryLock(tmp_path / "0_1"):
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        proc = ctx.Process(target=_try_lock, args=(str(tmp_path / "0_1"), out))
        proc.start()
        proc.join(60)
        message = out.get(timeout=5)
    assert f"pid={os.getpid()}" in message
