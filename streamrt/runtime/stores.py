"""The typed stores a processor sees.

:class:`ChangeLoggingStore` writes to the bytes store and to the store's changelog partition
through the task's record collector. :class:`CachingStore` sits in front of it, as Kafka
Streams' CachingKeyValueStore: updates stay in the thread's :class:`RecordCache` and reach the
bytes store, the changelog **and** downstream (through a flush listener) only when the store is
flushed — at each commit, or when the cache, over its byte budget, evicts a dirty entry — so
repeated updates to one key between flushes go out once. Both know their bytes store, serdes,
changelog partition, the collector and the task's current record context — not the task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from streamrt.runtime.processor import ValueAndTimestamp
from streamrt.runtime.sensors import StoreOps
from streamrt.serde import Serde
from streamrt.state import KeyValueStore, TopicPartition
from streamrt.state import timestamped as ts_format
from streamrt.state.store import StoreKind
from streamrt.state.window_store import SegmentSpec

__all__ = (
    "CachingStore",
    "ChangeLoggingStore",
    "FlushListener",
    "RecordCache",
    "RecordCollector",
    "RecordContext",
    "StoreSpec",
)


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """A named store with its serdes; ``kind`` None means the ``default.dsl.store`` config.
    ``caching``: a record cache in front of it (``statestore.cache.max.bytes`` > 0).

    ``segments`` makes it a window (segments by start) or session (by end) store: its key
    serde is then the *record* key's serde (routing and queries hash that alone) and its
    changelog is ``compact,delete`` with the retention."""

    name: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    kind: StoreKind | None = None
    caching: bool = True
    segments: SegmentSpec | None = None
    timestamped: bool = False  # Kafka's TimestampedKeyValueStore: rows keep their timestamp
    versioned_history_ms: int | None = None  # KIP-914: a versioned store with this retention


# forward(key, value) of the store's processor, called with the record context of the update
FlushListener = Callable[[Any, Any, Any], None]  # (key, new value, old value)


class RecordCollector(Protocol):
    """Where a task's output goes; the thread's producer drains it in order."""

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None: ...


@dataclass(slots=True)
class RecordContext:
    """The record being processed (or the punctuation time), shared by a task's processors
    and store views, as Kafka Streams' ProcessorRecordContext."""

    topic: str = ""
    partition: int = -1
    offset: int = -1
    timestamp: int = 0
    headers: tuple[tuple[str, bytes], ...] = ()


class ChangeLoggingStore:
    """A typed view over one bytes store; writes are logged to ``changelog``."""

    def __init__(
        self,
        spec: StoreSpec,
        store: KeyValueStore,
        changelog: TopicPartition,
        collector: RecordCollector,
        context: RecordContext,
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.changelog = changelog
        self._store = store
        self._collector = collector
        self._context = context
        self.ops = StoreOps()  # the processor's calls, for stream-state-metrics

    def get(self, key: Any) -> Any:
        found = self.get_with_timestamp(key)
        return None if found is None else found.value

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp | None:
        """The row and its timestamp (``NO_TIMESTAMP`` if the store keeps none)."""
        self.ops.gets += 1
        found = self.raw_get_with_timestamp(self.key_bytes(key))
        if found is None:
            return None
        return ValueAndTimestamp(self.spec.value_serde.deserialize(found[0]), found[1])

    def put(self, key: Any, value: Any, timestamp: int | None = None) -> None:
        """Store ``value`` with ``timestamp`` (default: the current record's), which is also
        the changelog record's timestamp."""
        self.ops.puts += 1
        kb = self.key_bytes(key)
        vb = self.spec.value_serde.serialize(value)
        if vb is None:
            self.delete(key)
            return
        self.raw_write(kb, bytes(vb), self._context.timestamp if timestamp is None else timestamp)

    def delete(self, key: Any) -> None:
        self.ops.deletes += 1
        self.raw_write(self.key_bytes(key), None, self._context.timestamp)

    def items(self) -> Iterator[tuple[Any, Any]]:
        for kb, vb in self.raw_items():
            yield self.spec.key_serde.deserialize(kb), self.spec.value_serde.deserialize(vb)

    def set_flush_listener(self, listener: FlushListener) -> bool:
        """Not cached: the processor forwards each update itself (returns False)."""
        return False

    def flush_cache(self) -> None:
        """Nothing cached."""

    def range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """Entries with ``start <= key < end`` in serialized-key order (``None``: unbounded);
        joins use it with bytes keys they lay out for prefix and time-range scans."""
        lo = None if start is None else self.key_bytes(start)
        hi = None if end is None else self.key_bytes(end)
        for kb, raw in self._store.range(lo, hi):
            vb = ts_format.decode(raw)[0] if self.spec.timestamped else raw
            yield self.spec.key_serde.deserialize(kb), self.spec.value_serde.deserialize(vb)

    def key_bytes(self, key: Any) -> bytes:
        kb = self.spec.key_serde.serialize(key)
        if kb is None:
            raise ValueError(f"store {self.name}: keys must not be None")
        return bytes(kb)

    # -- the bytes-level path (value bytes without the timestamp), a CachingStore's too ------

    def raw_get_with_timestamp(self, key: bytes) -> tuple[bytes, int] | None:
        raw = self._store.get(key)
        if raw is None:
            return None
        return ts_format.decode(raw) if self.spec.timestamped else (raw, ts_format.NO_TIMESTAMP)

    def raw_get(self, key: bytes) -> bytes | None:
        found = self.raw_get_with_timestamp(key)
        return None if found is None else found[0]

    def decode_value(self, raw: bytes) -> Any:
        return self.spec.value_serde.deserialize(raw)

    def raw_items(self) -> Iterator[tuple[bytes, bytes]]:
        if not self.spec.timestamped:
            return self._store.items()
        return ((kb, ts_format.decode(raw)[0]) for kb, raw in self._store.items())

    def raw_write(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """Write value bytes (with ``timestamp`` in a timestamped store) to the store, and to
        its changelog as a record with ``timestamp`` (Kafka's changelog format)."""
        if value is None:
            self._store.delete(key)
        else:
            stored = ts_format.encode(value, timestamp) if self.spec.timestamped else value
            self._store.put(key, stored)
        self._collector.send(self.changelog.topic, key, value, self.changelog.partition, timestamp)


# Kafka Streams counts a cache entry's key, value and bookkeeping; ~64 bytes of Python
# objects per entry here (the entry list, its dict slot).
_ENTRY_OVERHEAD = 64


class RecordCache:
    """One stream thread's byte budget (``statestore.cache.max.bytes`` / threads), shared by
    the caches of every store of its tasks. Each store's entries are kept in least-recently-
    updated order; a put over budget evicts from the store that was written to."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.flushes = 0  # whole-store flushes caused by eviction (for tests and metrics)

    def added(self, nbytes: int) -> None:
        self.size += nbytes

    def over_budget(self) -> bool:
        return self.size > self.max_bytes


class CachingStore:
    """A record cache in front of a :class:`ChangeLoggingStore` (see the module docstring).

    Entries hold the serialized key and value (``None``: a delete), the typed key and value
    the processor passed (what the flush forwards), and the record context of the update.
    """

    def __init__(
        self, logged: ChangeLoggingStore, cache: RecordCache, context: RecordContext
    ) -> None:
        self.name = logged.name
        self.spec = logged.spec
        self.changelog = logged.changelog
        self._logged = logged
        self._cache = cache
        self._context = context
        self._listener: FlushListener | None = None
        # key bytes → [value bytes | None, key, value, timestamp, topic, offset, size]
        self._dirty: dict[bytes, list[Any]] = {}
        self.ops = StoreOps()  # the processor's calls; misses: reads the cache did not answer

    def set_flush_listener(self, listener: FlushListener) -> bool:
        """Cached: ``listener`` forwards each key's last update when the cache flushes."""
        self._listener = listener
        return True

    @property
    def cached_entries(self) -> int:
        return len(self._dirty)

    def get(self, key: Any) -> Any:
        found = self.get_with_timestamp(key)
        return None if found is None else found.value

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp | None:
        self.ops.gets += 1
        kb = self._logged.key_bytes(key)
        entry = self._dirty.get(kb)
        if entry is None:
            self.ops.misses += 1  # beside the store read it leads to, nothing
            found = self._logged.raw_get_with_timestamp(kb)
        else:
            found = entry[0], entry[3]
        if found is None or found[0] is None:
            return None
        ts = found[1] if self.spec.timestamped else ts_format.NO_TIMESTAMP
        return ValueAndTimestamp(self.spec.value_serde.deserialize(found[0]), ts)

    def put(self, key: Any, value: Any, timestamp: int | None = None) -> None:
        """Cache ``value`` with ``timestamp`` (default: the current record's); the flush
        writes and forwards it with that timestamp."""
        self.ops.puts += 1
        vb = self.spec.value_serde.serialize(value)
        self._update(key, value, None if vb is None else bytes(vb), timestamp)

    def delete(self, key: Any) -> None:
        self.ops.deletes += 1
        self._update(key, None, None, None)

    def items(self) -> Iterator[tuple[Any, Any]]:
        merged: dict[bytes, bytes | None] = dict(self._logged.raw_items())
        merged.update((kb, e[0]) for kb, e in self._dirty.items())
        kser, vser = self.spec.key_serde, self.spec.value_serde
        for kb in sorted(merged):
            vb = merged[kb]
            if vb is not None:
                yield kser.deserialize(kb), vser.deserialize(vb)

    def _update(self, key: Any, value: Any, vb: bytes | None, timestamp: int | None) -> None:
        kb = self._logged.key_bytes(key)
        ctx = self._context
        ts = ctx.timestamp if timestamp is None else timestamp
        size = len(kb) + (0 if vb is None else len(vb)) + _ENTRY_OVERHEAD
        old = self._dirty.pop(kb, None)  # re-inserted last: dict order is LRU order
        self._cache.added(size - (0 if old is None else old[6]))
        self._dirty[kb] = [vb, key, value, ts, ctx.topic, ctx.offset, size]
        if self._cache.over_budget():
            # Kafka Streams evicts this store's least recent entry; a dirty one flushes the
            # whole store. Every entry here is dirty: flush the store.
            self._cache.flushes += 1
            self.flush_cache()

    def flush_cache(self) -> None:
        """Write each dirty key's last update to the store and changelog, then forward it
        downstream with that update's record context."""
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, {}
        ctx = self._context
        saved = ctx.topic, ctx.offset, ctx.timestamp
        self._cache.added(-sum(e[6] for e in dirty.values()))
        try:
            for kb, (vb, key, value, ts, topic, offset, _size) in dirty.items():
                old_raw = self._logged.raw_get(kb)
                if vb is None and old_raw is None:
                    continue  # deleting a key the store never held: neither written nor sent
                self._logged.raw_write(kb, vb, ts)
                if self._listener is not None:
                    old = None if old_raw is None else self._logged.decode_value(old_raw)
                    ctx.topic, ctx.offset, ctx.timestamp = topic, offset, ts
                    self._listener(key, value, old)
        finally:
            ctx.topic, ctx.offset, ctx.timestamp = saved
