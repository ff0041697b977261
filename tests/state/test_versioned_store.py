"""VersionedStore (KIP-914) on the real bytes stores: latest and as-of reads, out-of-order
puts, tombstones as versions, history retention, and a reopened RocksDB store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streamrt.state import InMemoryStore, KeyValueStore, RocksDBStore
from streamrt.state.versioned import LATEST, NOT_PUT, Version, VersionedStore


@pytest.fixture(params=["in_memory", "rocksdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyValueStore]:
    bytes_store: KeyValueStore = (
        InMemoryStore("v") if request.param == "in_memory" else RocksDBStore("v", tmp_path / "v")
    )
    bytes_store.open()
    yield bytes_store
    bytes_store.close()


def test_latest_and_as_of_with_out_of_order_puts(store: KeyValueStore) -> None:
    v = VersionedStore(store, history_retention_ms=100)
    v.put(b"a", b"T1", 1)
    v.put(b"a", b"T3", 10)
    v.put(b"a", b"T2", 5)  # out of order: a version in the middle
    assert v.get(b"a") == Version(b"T3", 10)
    assert v.get_as_of(b"a", 0) is None
    assert v.get_as_of(b"a", 4) == Version(b"T1", 1)
    assert v.get_as_of(b"a", 5) == Version(b"T2", 5)
    assert v.get_as_of(b"a", 9) == Version(b"T2", 5)
    assert v.get_as_of(b"a", 50) == Version(b"T3", 10)
    assert v.get(b"b") is None


def test_keys_do_not_mix_even_when_one_prefixes_another(store: KeyValueStore) -> None:
    v = VersionedStore(store, history_retention_ms=100)
    v.put(b"a", b"x", 1)
    v.put(b"ab", b"y", 2)
    v.put(b"a\x00", b"z", 3)
    assert [x.value for x in v.versions(b"a")] == [b"x"]
    assert v.get(b"ab") == Version(b"y", 2)


def test_negative_timestamps_sort_before_positive(store: KeyValueStore) -> None:
    v = VersionedStore(store, history_retention_ms=1000)
    v.put(b"k", b"pos", 3)
    v.put(b"k", b"neg", -3)
    assert [x.timestamp for x in v.versions(b"k")] == [-3, 3]


def test_tombstones_are_versions(store: KeyValueStore) -> None:
    v = VersionedStore(store, history_retention_ms=100)
    v.put(b"a", b"T1", 1)
    assert v.delete(b"a", 5) == Version(b"T1", 1)
    v.put(b"a", b"T2", 8)
    assert v.get_as_of(b"a", 3) == Version(b"T1", 1)
    assert v.get_as_of(b"a", 6) is None
    assert v.get(b"a") == Version(b"T2", 8)
    v.put(b"a", None, 9)
    assert v.get(b"a") is None
    assert v.get_as_of(b"a", 8) == Version(b"T2", 8)


def test_same_timestamp_replaces_the_version(store: KeyValueStore) -> None:
    v = VersionedStore(store, history_retention_ms=100)
    v.put(b"a", b"old", 4)
    v.put(b"a", b"new", 4)
    assert v.versions(b"a") == [Version(b"new", 4)]


def test_history_retention_drops_old_puts_reads_and_versions(store: KeyValueStore) -> None:
    v = VersionedStore(store, history_retention_ms=10)
    v.put(b"a", b"T1", 1)
    v.put(b"a", b"T2", 5)
    v.put(b"a", b"T3", 30)  # stream time 30: reads and puts before 20 are out of retention
    assert v.observed_stream_time == 30
    assert v.put(b"a", b"late", 19) == NOT_PUT
    assert v.put(b"a", b"ok", 20) == 30  # valid until T3
    assert v.get_as_of(b"a", 19) is None
    assert v.get_as_of(b"a", 20) == Version(b"ok", 20)
    # T1 and T2 are unreachable ("ok" is the version valid at the cutoff): removed
    assert [x.value for x in v.versions(b"a")] == [b"ok", b"T3"]
    assert v.put(b"a", b"T4", 31) == LATEST
    v.put(b"b", b"x", 45)
    v.put(b"a", b"T5", 46)
    assert [x.value for x in v.versions(b"a")] == [b"T4", b"T5"]
    assert v.get(b"a") == Version(b"T5", 46)


def test_latest_is_kept_beyond_retention(store: KeyValueStore) -> None:
    v = VersionedStore(store, history_retention_ms=0)
    v.put(b"a", b"T1", 1)
    v.put(b"b", b"x", 1000)
    v.put(b"a", b"T2", 1000)
    assert v.get(b"a") == Version(b"T2", 1000)
    assert v.get_as_of(b"a", 999) is None


def test_reopened_rocksdb_store_keeps_versions_and_stream_time(tmp_path: Path) -> None:
    rocks = RocksDBStore("v", tmp_path / "v")
    rocks.open()
    v = VersionedStore(rocks, history_retention_ms=10)
    v.put(b"a", b"T1", 1)
    v.put(b"a", b"T2", 5)
    rocks.flush(changelog_offset=2)
    rocks.close()
    rocks.open()
    v = VersionedStore(rocks, history_retention_ms=10)
    assert v.observed_stream_time == 5
    assert v.get_as_of(b"a", 3) == Version(b"T1", 1)
    rocks.close()


def test_negative_retention_is_rejected() -> None:
    with pytest.raises(ValueError, match="history retention"):
        VersionedStore(InMemoryStore("v"), history_retention_ms=-1)
