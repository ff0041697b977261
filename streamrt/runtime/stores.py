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

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from streamrt.runtime.processor import ValueAndTimestamp
from streamrt.runtime.sensors import StoreOps
from streamrt.serde import Serde
from streamrt.state import KeyValueStore
from streamrt.state import timestamped as ts_format
from streamrt.state.store import StoreKind
from streamrt.state.window_store import SegmentSpec
from streamrt.topic_partition import TopicPartition

logger = logging.getLogger(__name__)

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
    window_size_ms: int | None = None  # a processor's window store: ``put(key, v, start)``


class _KeyedView(Protocol):
    spec: StoreSpec

    def key_bytes(self, key: Any) -> bytes: ...


def bounds(view: _KeyedView, start: Any, end: Any) -> tuple[bytes | None, bytes | None]:
    """A range's serialized bounds (``None``: open); warns, as Kafka, when ``from`` > ``to``
    (the range is then empty)."""
    lo = None if start is None else view.key_bytes(start)
    hi = None if end is None else view.key_bytes(end)
    if lo is not None and hi is not None and lo > hi:
        logger.warning(
            "store %s: empty range: from %r is after to %r in serialized key order (arguments "
            "in the wrong order, or a serde that does not keep the order, e.g. negative ints)",
            view.spec.name,
            start,
            end,
        )
    return lo, hi


def prefix_bytes(view: _KeyedView, prefix: Any, serde: Serde[Any] | None) -> bytes:
    raw = (serde or view.spec.key_serde).serialize(prefix)
    if raw is None:
        raise ValueError(f"store {view.spec.name}: a prefix scan needs a non-null prefix")
    return bytes(raw)


def prefixed(rows: Iterable[tuple[bytes, bytes]], prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    return ((kb, vb) for kb, vb in rows if kb.startswith(prefix))


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
        if isinstance(value, ValueAndTimestamp):  # Kafka's TimestampedKeyValueStore.put
            value, timestamp = value.value, value.timestamp
        kb = self.key_bytes(key)
        vb = self.spec.value_serde.serialize(value)
        if vb is None:
            self.delete(key)
            return
        self.raw_write(kb, bytes(vb), self._context.timestamp if timestamp is None else timestamp)

    def delete(self, key: Any) -> Any:
        """Delete ``key``; returns the value it had (None: absent), as Kafka's ``delete``."""
        self.ops.deletes += 1
        kb = self.key_bytes(key)
        old = self.raw_get(kb)
        self.raw_write(kb, None, self._context.timestamp)
        return None if old is None else self.spec.value_serde.deserialize(old)

    def put_if_absent(self, key: Any, value: Any, timestamp: int | None = None) -> Any:
        """Put only if ``key`` has no value; returns the value it had (Kafka's
        ``putIfAbsent``)."""
        found = self.get(key)
        if found is None:
            self.put(key, value, timestamp)
        return found

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def approximate_num_entries(self) -> int:
        return sum(1 for _ in self.raw_items())

    def items(self) -> Iterator[tuple[Any, Any]]:
        for kb, vb in self.raw_items():
            yield self.spec.key_serde.deserialize(kb), self.spec.value_serde.deserialize(vb)

    def set_flush_listener(self, listener: FlushListener) -> bool:
        """Not cached: the processor forwards each update itself (returns False)."""
        return False

    def flush_cache(self) -> None:
        """Nothing cached."""

    def half_open_range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """Entries with ``start <= key < end`` in serialized-key order (``None``: unbounded);
        joins and buffers use it with bytes keys they lay out for prefix and time scans."""
        lo = None if start is None else self.key_bytes(start)
        hi = None if end is None else self.key_bytes(end)
        yield from self._typed(self._unstamped(self._store.range(lo, hi)))

    def range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """Kafka's ``range(from, to)``: ``from <= key <= to`` (both inclusive; ``None``: open)
        ascending by serialized key; nothing when ``from`` > ``to``."""
        return self._typed(self.raw_range(*bounds(self, start, end)))

    def reverse_range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """``range`` in descending key order (Kafka's ``reverseRange``)."""
        return self._typed(reversed(list(self.raw_range(*bounds(self, start, end)))))

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self.range(None, None)

    def reverse_all(self) -> Iterator[tuple[Any, Any]]:
        return self.reverse_range(None, None)

    def prefix_scan(self, prefix: Any, prefix_serde: Serde[Any] | None = None) -> Iterator[Any]:
        """Entries whose serialized key starts with the serialized ``prefix`` (Kafka's
        ``prefixScan(prefix, prefixKeySerializer)``; default: the store's key serde)."""
        return self._typed(
            prefixed(self.raw_range(None, None), prefix_bytes(self, prefix, prefix_serde))
        )

    def raw_range(self, lo: bytes | None, hi: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Key and value bytes (without the timestamp) with ``lo <= key <= hi`` (``None``:
        open), ascending."""
        if lo is not None and hi is not None and lo > hi:
            return iter(())
        end = None if hi is None else hi + b"\x00"  # the least key above ``hi``
        return self._unstamped(self._store.range(lo, end))

    def _unstamped(self, rows: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
        if not self.spec.timestamped:
            return iter(rows)
        return ((kb, ts_format.decode(raw)[0]) for kb, raw in rows)

    def _typed(self, rows: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[Any, Any]]:
        kser, vser = self.spec.key_serde, self.spec.value_serde
        for kb, vb in rows:
            yield kser.deserialize(kb), vser.deserialize(vb)

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
        return self._unstamped(self._store.items())

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
        if isinstance(value, ValueAndTimestamp):
            value, timestamp = value.value, value.timestamp
        vb = self.spec.value_serde.serialize(value)
        self._update(key, value, None if vb is None else bytes(vb), timestamp)

    def delete(self, key: Any) -> Any:
        """Delete ``key`` (in the cache); returns the value it had, as Kafka's ``delete``."""
        self.ops.deletes += 1
        old = self._value_of(self._logged.key_bytes(key))
        self._update(key, None, None, None)
        return old

    def _value_of(self, kb: bytes) -> Any:
        """The value of ``kb`` in the cache or the store, not counted as a processor's read."""
        entry = self._dirty.get(kb)
        vb = self._logged.raw_get(kb) if entry is None else entry[0]
        return None if vb is None else self.spec.value_serde.deserialize(vb)

    def put_if_absent(self, key: Any, value: Any, timestamp: int | None = None) -> Any:
        found = self.get(key)
        if found is None:
            self.put(key, value, timestamp)
        return found

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def approximate_num_entries(self) -> int:
        return sum(1 for _ in self._merged_range(None, None))

    def items(self) -> Iterator[tuple[Any, Any]]:
        return self._decoded(self._merged_range(None, None))

    def range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """As :meth:`ChangeLoggingStore.range`, cached updates included."""
        return self._decoded(self._merged_range(*bounds(self._logged, start, end)))

    def reverse_range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        rows = list(self._merged_range(*bounds(self._logged, start, end)))
        return self._decoded(reversed(rows))

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self.range(None, None)

    def reverse_all(self) -> Iterator[tuple[Any, Any]]:
        return self.reverse_range(None, None)

    def prefix_scan(self, prefix: Any, prefix_serde: Serde[Any] | None = None) -> Iterator[Any]:
        raw = prefix_bytes(self._logged, prefix, prefix_serde)
        return self._decoded(prefixed(self._merged_range(None, None), raw))

    def half_open_range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """As :meth:`ChangeLoggingStore.half_open_range`, cached updates included."""
        lo, hi = bounds(self._logged, start, end)
        rows = self._merged_range(lo, hi, inclusive=False)
        return self._decoded(rows)

    def _merged_range(
        self, lo: bytes | None, hi: bytes | None, inclusive: bool = True
    ) -> Iterator[tuple[bytes, bytes]]:
        """The store's rows from ``lo`` to ``hi`` (included unless not ``inclusive``) with the
        cache's updates over them, ascending."""
        if hi is not None and not inclusive and lo is not None and lo >= hi:
            return
        rows = self._logged.raw_range(lo, hi)
        merged: dict[bytes, bytes | None] = {
            kb: vb for kb, vb in rows if inclusive or hi is None or kb != hi
        }
        merged.update(
            (kb, e[0])
            for kb, e in self._dirty.items()
            if (lo is None or kb >= lo) and (hi is None or kb < hi or (inclusive and kb == hi))
        )
        for kb in sorted(merged):
            vb = merged[kb]
            if vb is not None:
                yield kb, vb

    def _decoded(self, rows: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[Any, Any]]:
        kser, vser = self.spec.key_serde, self.spec.value_serde
        for kb, vb in rows:
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
