"""Typed, change-logging views of window and session stores (Kafka Streams'
TimestampedWindowStore and SessionStore as a processor sees them).

Keys are :class:`Windowed`; the bytes key is ``<key serde bytes><start><end>`` (8 bytes BE
each) and is also the changelog key. Values are stored with the aggregate's timestamp (the
largest record timestamp in the window): ``<timestamp: 8 bytes BE><value serde bytes>``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from streamrt.runtime.processor import ValueAndTimestamp, Windowed
from streamrt.runtime.stores import ChangeLoggingStore, RecordCollector, RecordContext, StoreSpec
from streamrt.runtime.versioned_stores import VersionedStoreView
from streamrt.state import KeyValueStore, SegmentedStore, WindowEntry
from streamrt.state.window_store import window_key
from streamrt.topic_partition import TopicPartition

__all__ = (
    "SessionStoreView",
    "StoreView",
    "TimestampedWindow",
    "WindowStoreView",
    "store_view",
)

_TS = struct.Struct(">q")
_MAX_TIME = 2**63 - 1


@dataclass(frozen=True, slots=True)
class TimestampedWindow:
    """One stored window of a key: bounds, aggregate and the aggregate's timestamp."""

    start: int
    end: int
    value: Any
    timestamp: int


class _SegmentedView:
    """Shared by window and session views: serdes, logging, and decoding entries."""

    def __init__(
        self,
        spec: StoreSpec,
        store: SegmentedStore,
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

    @property
    def observed_stream_time(self) -> int:
        return self._store.observed_stream_time

    def put(self, key: Windowed | Any, value: Any, timestamp: int | None = None) -> None:
        """Store ``value`` for the window (``None`` deletes) with the aggregate timestamp
        ``timestamp`` (default: the current record's, as Kafka's ``SessionStore.put(window,
        agg)``), and log it to the changelog. A processor's window store (one with a window
        size) also takes Kafka's ``put(key, value, window_start)``: a plain key, the window's
        start, and a value or a :class:`ValueAndTimestamp` (default: the record's time)."""
        if not isinstance(key, Windowed):
            size = self.spec.window_size_ms
            if size is None or timestamp is None:
                raise TypeError(
                    f"store {self.name}: put() needs a Windowed key, or a window store's "
                    "put(key, value, window_start)"
                )
            stamp = self._context.timestamp
            if isinstance(value, ValueAndTimestamp):
                value, stamp = value.value, value.timestamp
            self.put(Windowed(key, timestamp, timestamp + size), value, stamp)
            return
        if timestamp is None:
            timestamp = self._context.timestamp
        if value is None:
            self.remove(key)
            return
        kb = self._key(key)
        vb = self.spec.value_serde.serialize(value)
        if vb is None:
            self.remove(key)
            return
        data = _TS.pack(timestamp) + vb
        self._store.put(kb, data)
        self._log(kb, data)

    def remove(self, key: Windowed) -> None:
        kb = self._key(key)
        self._store.delete(kb)
        self._log(kb, None)

    delete = remove

    def get(self, key: Windowed) -> Any:
        found = self.get_timestamped(key)
        return None if found is None else found.value

    def get_timestamped(self, key: Windowed) -> TimestampedWindow | None:
        raw = self._store.get(self._key(key))
        if raw is None:
            return None
        return TimestampedWindow(key.start, key.end, self._value(raw), _TS.unpack(raw[:8])[0])

    def closed_windows(
        self, time_from: int, time_to: int
    ) -> list[tuple[Windowed, TimestampedWindow]]:
        """Every key's windows whose start (sessions: end) is in ``[time_from, time_to]``, in
        Kafka's time-ordered store order: by that time (sessions: end, then start), then key
        bytes (emit-final reads them). As Kafka's stores, a window store reads from its
        retention floor, a session store from its oldest live segment."""
        if time_from > time_to:
            return []
        sessions = self.spec.segments is not None and self.spec.segments.segment_by == "end"
        entries = list(self._store.fetch_all(time_from, time_to, whole_segments=sessions))
        if sessions:
            entries.sort(key=lambda e: (e.end, e.start, e.key))
        else:
            entries.sort(key=lambda e: (e.start, e.key))
        kser = self.spec.key_serde
        return [
            (Windowed(kser.deserialize(e.key), e.start, e.end), self._entry(e)) for e in entries
        ]

    def items(self) -> Iterator[tuple[Windowed, Any]]:
        """Every live window of every key (Windowed key, aggregate)."""
        for entry in self._store.fetch_all(-_MAX_TIME, _MAX_TIME):
            key = self.spec.key_serde.deserialize(entry.key)
            yield Windowed(key, entry.start, entry.end), self._value(entry.value)

    def _fetch(self, key: Any, time_from: int, time_to: int) -> Iterator[TimestampedWindow]:
        for entry in self._store.fetch(self._record_key(key), time_from, time_to):
            yield self._entry(entry)

    def _entry(self, entry: WindowEntry) -> TimestampedWindow:
        return TimestampedWindow(
            entry.start, entry.end, self._value(entry.value), _TS.unpack(entry.value[:8])[0]
        )

    def _value(self, raw: bytes) -> Any:
        return self.spec.value_serde.deserialize(raw[8:])

    def _record_key(self, key: Any) -> bytes:
        kb = self.spec.key_serde.serialize(key)
        if kb is None:
            raise ValueError(f"store {self.name}: keys must not be None")
        return bytes(kb)

    def _key(self, key: Windowed) -> bytes:
        return window_key(self._record_key(key.key), key.start, key.end)

    def _log(self, key: bytes, value: bytes | None) -> None:
        self._collector.send(
            self.changelog.topic, key, value, self.changelog.partition, self._context.timestamp
        )


class WindowStoreView(_SegmentedView):
    """A window store: windows of a key fetched by their *start* time."""

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, int, Any]]:
        """``(start, end, value)`` of ``key``'s windows with ``time_from <= start <= time_to``
        (both inclusive, as Kafka's ``ReadOnlyWindowStore.fetch``), ascending by start."""
        return [(w.start, w.end, w.value) for w in self._fetch(key, time_from, time_to)]

    def fetch_timestamped(self, key: Any, time_from: int, time_to: int) -> list[TimestampedWindow]:
        return list(self._fetch(key, time_from, time_to))

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, int, Any]]:
        """``fetch`` newest window first (Kafka's ``backwardFetch``)."""
        return self.fetch(key, time_from, time_to)[::-1]

    def fetch_range(
        self, key_from: Any, key_to: Any, time_from: int, time_to: int
    ) -> list[tuple[Windowed, Any]]:
        """Windows of keys in ``[key_from, key_to]`` (serialized order, both inclusive;
        ``None``: open) starting in ``[time_from, time_to]`` (Kafka's ``fetch(keyFrom, keyTo,
        timeFrom, timeTo)``), in the store's order (see :meth:`fetch_all`)."""
        lo = None if key_from is None else self._record_key(key_from)
        hi = None if key_to is None else self._record_key(key_to)
        if lo is not None and hi is not None and lo > hi:
            return []
        return [
            (w, v)
            for w, v, kb in self._ordered(time_from, time_to)
            if (lo is None or kb >= lo) and (hi is None or kb <= hi)
        ]

    def backward_fetch_range(
        self, key_from: Any, key_to: Any, time_from: int, time_to: int
    ) -> list[tuple[Windowed, Any]]:
        return self.fetch_range(key_from, key_to, time_from, time_to)[::-1]

    def fetch_all(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        """Every key's windows starting in ``[time_from, time_to]``, in Kafka's store order:
        a persistent store by segment, then key bytes, then start; an in-memory one by start,
        then key bytes."""
        return [(w, v) for w, v, _kb in self._ordered(time_from, time_to)]

    def backward_fetch_all(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        return self.fetch_all(time_from, time_to)[::-1]

    def all(self) -> list[tuple[Windowed, Any]]:
        return self.fetch_all(-_MAX_TIME, _MAX_TIME)

    def backward_all(self) -> list[tuple[Windowed, Any]]:
        return self.all()[::-1]

    def _ordered(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any, bytes]]:
        if time_from > time_to:
            return []
        entries = list(self._store.fetch_all(time_from, time_to))
        if not self._store.persistent:
            entries.sort(key=lambda e: (e.start, e.key))
        else:
            interval = self.spec.segments.interval if self.spec.segments else 1
            entries.sort(key=lambda e: (e.start // interval, e.key, e.start))
        kser = self.spec.key_serde
        return [
            (Windowed(kser.deserialize(e.key), e.start, e.end), self._value(e.value), e.key)
            for e in entries
        ]


class SessionStoreView(_SegmentedView):
    """A session store: sessions of a key found by overlap with a time range."""

    def find_sessions(
        self, key: Any, earliest_end: int, latest_start: int
    ) -> list[TimestampedWindow]:
        """Sessions of ``key`` with ``end >= earliest_end`` and ``start <= latest_start``."""
        return [w for w in self._fetch(key, earliest_end, _MAX_TIME) if w.start <= latest_start]

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, int, Any]]:
        """``(start, end, value)`` of ``key``'s sessions overlapping ``[time_from, time_to]``."""
        return [(w.start, w.end, w.value) for w in self.find_sessions(key, time_from, time_to)]

    def backward_find_sessions(
        self, key: Any, earliest_end: int, latest_start: int
    ) -> list[TimestampedWindow]:
        """``find_sessions`` latest session first (Kafka's ``backwardFindSessions``)."""
        return self.find_sessions(key, earliest_end, latest_start)[::-1]

    def fetch_session(self, key: Any, start: int, end: int) -> Any:
        """The aggregate of ``key``'s session ``[start, end]``, or None (Kafka's
        ``fetchSession``)."""
        return self.get(Windowed(key, start, end))


StoreView = ChangeLoggingStore | WindowStoreView | SessionStoreView | VersionedStoreView


def store_view(
    spec: StoreSpec,
    store: KeyValueStore,
    changelog: TopicPartition,
    collector: RecordCollector,
    context: RecordContext,
) -> StoreView:
    """The typed view a processor gets for ``spec``: key-value, window or session."""
    if spec.versioned_history_ms is not None:
        return VersionedStoreView(spec, store, changelog, collector, context)
    if spec.segments is None:
        return ChangeLoggingStore(spec, store, changelog, collector, context)
    if not isinstance(store, SegmentedStore):
        raise TypeError(f"store {spec.name}: a window store needs a segmented bytes store")
    if spec.segments.segment_by == "end":
        return SessionStoreView(spec, store, changelog, collector, context)
    return WindowStoreView(spec, store, changelog, collector, context)
