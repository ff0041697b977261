"""StateManager: explicit changelog registration, flush-with-offset, checkpoint hint,
restoration entry points."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamrt.state import (
    IN_MEMORY,
    ROCKS_DB,
    StateLockedError,
    StateManager,
    TopicPartition,
    read_checkpoint_hint,
)

DISK = TopicPartition("app-disk-changelog", 2)
MEM = TopicPartition("app-mem-changelog", 2)


def manager(tmp_path: Path) -> StateManager:
    state = StateManager("0_2", tmp_path / "0_2")
    state.register("disk", DISK, ROCKS_DB)
    state.register("mem", MEM, IN_MEMORY)
    return state


def test_registration_is_explicit_and_unique(tmp_path: Path) -> None:
    state = manager(tmp_path)
    assert state.changelog_partitions == (DISK, MEM)
    assert state.store_for(MEM) == "mem" and state.changelog_of("disk") == DISK
    with pytest.raises(ValueError, match="registered twice"):
        state.register("other", DISK, ROCKS_DB)


def test_flush_takes_only_its_changelogs_and_hints_only_persistent_stores(tmp_path) -> None:
    state = manager(tmp_path)
    assert state.open() == {DISK: None, MEM: None}
    state.store("disk").put(b"k", b"1")
    state.store("mem").put(b"k", b"2")
    # the producer's flush reports every partition written; unrelated ones are ignored
    state.flush({DISK: 4, MEM: 6, TopicPartition("app-disk-changelog", 3): 99})
    assert state.positions() == {DISK: 4, MEM: 6}
    assert read_checkpoint_hint(tmp_path / "0_2") == {"disk": 4}
    state.close()
    assert manager(tmp_path).open() == {DISK: 4, MEM: None}


def test_restoration_entry_points(tmp_path: Path) -> None:
    state = manager(tmp_path)
    state.open()
    state.restore_batch(MEM, [(b"a", b"1"), (b"b", b"2"), (b"a", None)], next_offset=3)
    assert state.position(MEM) == 3
    assert list(state.store("mem").items()) == [(b"b", b"2")]
    state.mark_restored(MEM, 5)  # the end passed compacted-away offsets
    state.mark_restored(DISK, 0)  # empty changelog: the empty store is complete
    assert state.positions() == {DISK: 0, MEM: 5}
    state.close()


def test_the_directory_has_one_owner(tmp_path: Path) -> None:
    first = manager(tmp_path)
    first.open()
    with pytest.raises(StateLockedError):
        manager(tmp_path).open()
    first.close()
    second = manager(tmp_path)
    second.open()
    second.close()
