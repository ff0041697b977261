"""Exactly-once at the StateManager: an aborted transaction's staged writes never reach
RocksDB, a committed one's reach it with the changelog offset after the commit marker."""

from __future__ import annotations

from pathlib import Path

from streamrt.state import ROCKS_DB, StateManager, TopicPartition

CHANGELOG = TopicPartition("app-counts-changelog", 0)


def manager(tmp_path: Path) -> StateManager:
    m = StateManager("0_0", tmp_path / "0_0")
    m.register("counts", CHANGELOG, ROCKS_DB)
    m.open()
    return m


def test_discarded_writes_never_become_durable(tmp_path: Path) -> None:
    m = manager(tmp_path)
    m.store("counts").put(b"a", b"1")
    m.flush({CHANGELOG: 2})  # transaction 1 committed: offset after its marker
    m.store("counts").put(b"a", b"2")
    m.store("counts").put(b"b", b"1")
    assert m.store("counts").get(b"a") == b"2"  # read-your-writes during processing
    m.discard()  # transaction 2 aborted
    assert m.store("counts").get(b"a") == b"1"
    m.flush({})  # the next commit carries nothing of transaction 2
    m.close()
    reopened = manager(tmp_path)
    assert list(reopened.store("counts").items()) == [(b"a", b"1")]
    assert reopened.positions() == {CHANGELOG: 2}
    reopened.close()


def test_a_crash_before_the_flush_leaves_the_last_committed_state(tmp_path: Path) -> None:
    m = manager(tmp_path)
    m.store("counts").put(b"a", b"1")
    m.flush({CHANGELOG: 2})
    m.store("counts").put(b"a", b"2")  # staged, transaction still open
    m.close()  # what a SIGKILL leaves on disk: the staged write is gone with the process
    reopened = manager(tmp_path)
    assert reopened.store("counts").get(b"a") == b"1"
    assert reopened.positions() == {CHANGELOG: 2}
    reopened.close()
