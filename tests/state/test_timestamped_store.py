"""Timestamped key-value stores (Kafka's TimestampedKeyValueStore): rows keep their timestamp
in the local store, the changelog carries plain values with the row timestamp as the record's,
and restoration (RocksDB, across a reopen) puts the timestamp back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamrt.runtime.processor import ValueAndTimestamp
from streamrt.runtime.stores import CachingStore, ChangeLoggingStore, RecordCache, RecordContext
from streamrt.runtime.stores import StoreSpec
from streamrt.serde import JsonSerde, StrSerde
from streamrt.state import ROCKS_DB, StateManager, TopicPartition

LOG = TopicPartition("app-agg-changelog", 0)


class Sent:
    """A record collector that keeps what was sent (the changelog records)."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes | None, int]] = []

    def send(
        self,
        topic: str,
        key: Any,
        value: Any,
        partition: Any,
        timestamp_ms: int,
        headers: Any = None,
    ) -> None:
        self.records.append((key, value, timestamp_ms))


def open_view(
    tmp_path: Path, timestamped: bool = True
) -> tuple[StateManager, ChangeLoggingStore, Sent, RecordContext]:
    state = StateManager("0_0", tmp_path / "0_0")
    state.register("agg", LOG, ROCKS_DB, timestamped=timestamped)
    state.open()
    spec = StoreSpec("agg", StrSerde(), JsonSerde(), timestamped=timestamped)
    sent, ctx = Sent(), RecordContext(timestamp=50)
    return state, ChangeLoggingStore(spec, state.store("agg"), LOG, sent, ctx), sent, ctx


def test_rows_keep_their_timestamp_and_the_changelog_carries_plain_values(tmp_path: Path) -> None:
    state, view, sent, _ctx = open_view(tmp_path)
    view.put("a", 3, timestamp=7)
    view.put("b", 4)  # the current record's timestamp
    assert view.get_with_timestamp("a") == ValueAndTimestamp(3, 7)
    assert view.get_with_timestamp("b") == ValueAndTimestamp(4, 50)
    assert view.get("a") == 3 and dict(view.items()) == {"a": 3, "b": 4}
    assert sent.records == [(b"a", b"3", 7), (b"b", b"4", 50)]
    state.close()


def test_restoration_puts_the_record_timestamp_back(tmp_path: Path) -> None:
    state, _view, _sent, _ctx = open_view(tmp_path)
    state.restore_batch(LOG, [(b"a", b"1", 11), (b"b", b"2", 12), (b"b", None, 13)], 3)
    state.flush({LOG: 3})
    state.close()
    state, view, _sent, _ctx = open_view(tmp_path)  # reopened from disk
    assert view.get_with_timestamp("a") == ValueAndTimestamp(1, 11)
    assert view.get("b") is None
    state.close()


def test_a_plain_store_keeps_no_timestamp(tmp_path: Path) -> None:
    state, view, sent, _ctx = open_view(tmp_path, timestamped=False)
    view.put("a", 3, timestamp=7)
    assert state.store("agg").get(b"a") == b"3"  # the old format: value bytes only
    assert view.get_with_timestamp("a") == ValueAndTimestamp(3, -1)
    assert sent.records == [(b"a", b"3", 7)]
    state.close()


def test_the_cache_keeps_and_flushes_the_row_timestamp(tmp_path: Path) -> None:
    state, view, sent, ctx = open_view(tmp_path)
    cached = CachingStore(view, RecordCache(1 << 20), ctx)
    flushed: list[tuple[Any, Any, Any, int]] = []
    cached.set_flush_listener(lambda k, new, old: flushed.append((k, new, old, ctx.timestamp)))
    cached.put("a", 1, timestamp=9)
    assert cached.get_with_timestamp("a") == ValueAndTimestamp(1, 9)
    cached.flush_cache()
    assert flushed == [("a", 1, None, 9)] and sent.records == [(b"a", b"1", 9)]
    assert view.get_with_timestamp("a") == ValueAndTimestamp(1, 9)
    state.close()


def test_an_old_format_store_is_rebuilt_from_its_changelog(tmp_path: Path) -> None:
    state, view, _sent, _ctx = open_view(tmp_path, timestamped=False)  # as before timestamps
    view.put("a", 1)
    state.flush({LOG: 1})
    state.close()
    state = StateManager("0_0", tmp_path / "0_0")
    state.register("agg", LOG, ROCKS_DB, timestamped=True)
    assert state.open() == {LOG: None}  # removed: restored from the beginning of the changelog
    state.restore_batch(LOG, [(b"a", b"1", 4)], 1)
    state.flush({LOG: 1})
    state.close()
    state, view, _sent, _ctx = open_view(tmp_path)  # now marked: kept
    assert state.positions() == {LOG: 1}
    assert view.get_with_timestamp("a") == ValueAndTimestamp(1, 4)
    state.close()
