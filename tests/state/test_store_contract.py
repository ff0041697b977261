"""The KeyValueStore contract, run against every implementation (RocksDB and in-memory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streamrt.state import IN_MEMORY, ROCKS_DB, KeyValueStore, StoreKind, make_store


@pytest.fixture(params=[ROCKS_DB, IN_MEMORY])
def kind(request: pytest.FixtureRequest) -> StoreKind:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def store(kind: StoreKind, tmp_path: Path) -> Iterator[KeyValueStore]:
    s = make_store(kind, "s", tmp_path)
    s.open()
    yield s
    s.close()


def test_implements_the_protocol(store: KeyValueStore) -> None:
    assert isinstance(store, KeyValueStore)
    assert store.is_open


def test_staged_writes_are_read_back_before_flush(store: KeyValueStore) -> None:
    store.put(b"a", b"1")
    store.put(b"b", b"2")
    store.delete(b"a")
    assert store.get(b"a") is None
    assert store.get(b"b") == b"2"
    assert list(store.items()) == [(b"b", b"2")]


def test_flush_writes_data_and_offset_together(store: KeyValueStore) -> None:
    assert store.changelog_offset() is None
    store.put(b"k", b"v")
    store.flush(7)
    assert store.changelog_offset() == 7
    assert store.get(b"k") == b"v"
    store.delete(b"k")
    store.flush(None)  # nothing delivered to the changelog: the offset stays
    assert store.changelog_offset() == 7
    assert store.get(b"k") is None


def test_items_and_range_are_ordered_and_merge_staged_writes(store: KeyValueStore) -> None:
    for key in (b"d", b"a", b"c"):
        store.put(key, key.upper())
    store.flush(1)
    store.put(b"b", b"B")
    store.delete(b"c")
    assert [k for k, _ in store.items()] == [b"a", b"b", b"d"]
    assert list(store.range(b"b", b"d")) == [(b"b", b"B")]
    assert [k for k, _ in store.range(None, b"b")] == [b"a"]
    assert [k for k, _ in store.range(b"b", None)] == [b"b", b"d"]


def test_write_batch_applies_tombstones_and_advances_offset(store: KeyValueStore) -> None:
    store.write_batch([(b"a", b"1"), (b"b", b"2"), (b"a", None)], next_offset=10)
    assert list(store.items()) == [(b"b", b"2")]
    assert store.changelog_offset() == 10


def test_write_batch_refuses_to_interleave_with_staged_writes(store: KeyValueStore) -> None:
    store.put(b"a", b"1")
    with pytest.raises(RuntimeError, match="interleaved"):
        store.write_batch([(b"b", b"2")], next_offset=1)


def test_closed_store_refuses_reads(store: KeyValueStore) -> None:
    store.close()
    assert not store.is_open
    with pytest.raises(RuntimeError, match="not open"):
        store.get(b"a")


def test_reopen_keeps_data_only_if_persistent(kind: StoreKind, tmp_path: Path) -> None:
    store = make_store(kind, "s", tmp_path)
    store.open()
    store.put(b"a", b"1")
    store.flush(3)
    store.put(b"unflushed", b"x")
    store.close()
    store = make_store(kind, "s", tmp_path)
    store.open()
    if store.persistent:
        assert store.changelog_offset() == 3
        assert list(store.items()) == [(b"a", b"1")]
    else:  # rebuilt from the changelog at every start, as Kafka Streams' in-memory stores
        assert store.changelog_offset() is None
        assert list(store.items()) == []
    store.close()


def test_discard_drops_staged_writes_and_keeps_durable_data(store: KeyValueStore) -> None:
    store.put(b"k", b"committed")
    store.flush(3)
    store.put(b"k", b"aborted")
    store.put(b"new", b"aborted")
    store.delete(b"k2")
    assert store.get(b"k") == b"aborted"  # read-your-writes while the transaction is open
    store.discard()
    assert store.get(b"k") == b"committed"
    assert store.get(b"new") is None
    assert list(store.items()) == [(b"k", b"committed")]
    store.flush(None)  # nothing staged any more: a later flush writes nothing aborted
    assert store.changelog_offset() == 3
    assert list(store.items()) == [(b"k", b"committed")]
