"""``KTable.suppress``: hold table updates back, emitting one result per key later.

- ``Suppressed.until_window_closes(BufferConfig.unbounded())``: emit-final. A windowed
  result is buffered until stream time reaches ``window end + grace`` (sessions: ``+ gap``
  as well, since a session can still grow by the gap), then its last value is emitted once.
  Tombstones (merged-away sessions) are never emitted.
- ``Suppressed.until_time_limit(ms, buffer_config)``: rate limit per key. A key's first update
  starts its timer; newer updates replace the buffered value without restarting it; the value
  is emitted once stream time reaches that first timestamp + ``ms``. Tombstones are emitted.

An entry keeps the value the key had before its first buffered update (Kafka's prior value)
and is emitted as ``Change(last value, prior value)``, so a re-grouping after the suppress
subtracts what its aggregate last saw (Kafka's suppress sends old values).

Stream time is the suppress processor's own largest input timestamp; nothing is emitted on
wall-clock time. A reopened or restored task reads it back as the largest timestamp of its
buffered entries or, if larger, the time kept in the store ``<buffer name>-stream-time`` (with a
changelog), so it holds back or emits a late record as the live one would have. That store is
written only when the entry carrying the stream time leaves the buffer (or is overwritten by
an older record, or a null key is skipped): one write per emitted burst, not per record.
As Kafka's time-ordered buffer, due entries go out by buffer time, then by
serialized key bytes, each with the timestamp of the record buffered last for its key.
The buffer is a key-value store with a changelog: a restart restores it, so
results buffered before are neither lost nor emitted twice (an emitted entry's delete is
logged with the emitted record, in the same commit).
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal, cast

from streamrt.errors import ConfigError, StreamrtError
from streamrt.runtime.processor import Change, Processor, ProcessorContext, Windowed
from streamrt.runtime.processors.tables import as_change
from streamrt.runtime.stores import ChangeLoggingStore
from streamrt.runtime.windows import to_ms
from streamrt.serde import Serde

__all__ = (
    "BufferConfig",
    "BufferFullError",
    "BufferedSerde",
    "SuppressProcessor",
    "Suppressed",
    "stream_time_store",
)

_HEAD = struct.Struct(">qqB")  # buffer time, record timestamp, flags
_HAS_VALUE, _HAS_PRIOR = 1, 2  # flags; an entry without a prior value has the old layout
_LEN = struct.Struct(">I")
_NO_TIME = -(2**63)
_STREAM_TIME = b"observed-stream-time"


def stream_time_store(buffer_store: str) -> str:
    """The store keeping the observed stream time of the suppress buffered in ``buffer_store``."""
    return f"{buffer_store.removesuffix('-store')}-stream-time"


OnFull = Literal["emit", "shut_down"]


class BufferFullError(StreamrtError):
    """A strict suppression buffer exceeded its capacity (``shut_down_when_full``)."""


@dataclass(frozen=True, slots=True)
class BufferConfig:
    """Capacity of a suppression buffer (records and/or bytes; None = unbounded) and what to do
    when it overflows: ``emit`` the oldest entries early, or ``shut_down`` (strict)."""

    max_records: int | None = None
    max_bytes: int | None = None
    on_full: OnFull = "shut_down"

    @classmethod
    def unbounded(cls) -> BufferConfig:
        """Strict and never full: final results are exact; memory is not bounded."""
        return cls(None, None, "shut_down")

    @classmethod
    def max_records_of(cls, n: int) -> BufferConfig:
        """At most ``n`` keys, emitting the oldest early on overflow (Kafka's ``maxRecords``)."""
        return cls(_limit(n, "max records"), None, "emit")

    @classmethod
    def max_bytes_of(cls, n: int) -> BufferConfig:
        """At most ``n`` bytes of keys and values, emitting early on overflow."""
        return cls(None, _limit(n, "max bytes"), "emit")

    def with_max_records(self, n: int) -> BufferConfig:
        return replace(self, max_records=_limit(n, "max records"))

    def with_max_bytes(self, n: int) -> BufferConfig:
        return replace(self, max_bytes=_limit(n, "max bytes"))

    def shut_down_when_full(self) -> BufferConfig:
        return replace(self, on_full="shut_down")

    def emit_early_when_full(self) -> BufferConfig:
        return replace(self, on_full="emit")

    @property
    def strict(self) -> bool:
        return self.on_full == "shut_down"


def _limit(n: int, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ConfigError(f"suppression buffer {what} must be a positive int, got {n!r}")
    return n


@dataclass(frozen=True, slots=True)
class Suppressed:
    """What ``KTable.suppress`` holds back; build with the two class methods."""

    until: Literal["window_close", "time_limit"]
    buffer: BufferConfig
    time_limit_ms: int = 0
    name: str | None = None

    @classmethod
    def until_window_closes(cls, buffer: BufferConfig) -> Suppressed:
        if not buffer.strict:
            raise ConfigError(
                "until_window_closes needs a strict buffer (BufferConfig.unbounded() or "
                "...shut_down_when_full()): emitting early would break final results"
            )
        return cls("window_close", buffer)

    @classmethod
    def until_time_limit(cls, time_limit: int | timedelta, buffer: BufferConfig) -> Suppressed:
        ms = to_ms(time_limit, "suppression time limit")
        if ms < 0:
            raise ConfigError(f"suppression time limit must not be negative, got {ms} ms")
        return cls("time_limit", buffer, ms)

    def with_name(self, name: str) -> Suppressed:
        """Name the buffer (its store is ``<name>-store``): keeps the changelog topic stable."""
        return replace(self, name=name)


class BufferedSerde:
    """Buffer entries ``(buffer_time, timestamp, value, prior)``: a 17-byte head (the flags say
    which values are present), then the value bytes, or with a prior value: the value's length
    (4 bytes), the value bytes and the prior value's bytes. Entries logged before prior values
    were kept (no prior flag) read back with ``prior`` None."""

    def __init__(self, value_serde: Serde[Any]) -> None:
        self.value_serde = value_serde

    def serialize(self, entry: tuple[int, int, Any, Any] | None) -> bytes | None:
        if entry is None:
            return None
        buffer_time, timestamp, value, prior = entry
        vb = None if value is None else self.value_serde.serialize(value)
        pb = None if prior is None else self.value_serde.serialize(prior)
        flags = (_HAS_VALUE if vb is not None else 0) | (_HAS_PRIOR if pb is not None else 0)
        head = _HEAD.pack(buffer_time, timestamp, flags)
        if pb is None:
            return head + (vb or b"")
        return head + _LEN.pack(len(vb or b"")) + (vb or b"") + pb

    def deserialize(self, data: bytes | None) -> tuple[int, int, Any, Any] | None:
        if data is None:
            return None
        buffer_time, timestamp, flags = _HEAD.unpack(data[: _HEAD.size])
        rest = data[_HEAD.size :]
        prior = None
        if flags & _HAS_PRIOR:
            (n,) = _LEN.unpack(rest[: _LEN.size])
            rest, pb = rest[_LEN.size : _LEN.size + n], rest[_LEN.size + n :]
            prior = self.value_serde.deserialize(pb)
        value = self.value_serde.deserialize(rest) if flags & _HAS_VALUE else None
        return buffer_time, timestamp, value, prior


@dataclass(slots=True)
class _Entry:
    key: Any
    buffer_time: int
    timestamp: int
    value: Any
    size: int
    prior: Any = None  # the key's value before its first buffered update


class SuppressProcessor(Processor):
    """Buffers updates by key (bytes of the upstream key serde) in a changelogged store and
    emits them in (buffer time, key bytes) order once due; see the module docstring."""

    def __init__(
        self,
        store: str,
        key_serde: Serde[Any],
        suppressed: Suppressed,
        close_delay_ms: int | None,
    ) -> None:
        self.store_name = store
        self.key_serde = key_serde
        self.suppressed = suppressed
        self.final = suppressed.until == "window_close"
        self.delay = (close_delay_ms or 0) if self.final else suppressed.time_limit_ms
        self.buffer_time: Callable[[Any, int], int] = (
            (lambda key, _ts: cast(Windowed, key).end) if self.final else (lambda _k, ts: ts)
        )
        self._entries: dict[bytes, _Entry] | None = None
        self._heap: list[tuple[int, bytes]] = []  # (buffer time, key bytes): Kafka's order
        self._bytes = 0
        self.observed = _NO_TIME

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._entries = None  # loaded at the first record: the store is restored by then
        self.observed = _NO_TIME
        self._kept = _NO_TIME  # the stream time in the store ``stream_time_store``

    def _clock(self) -> ChangeLoggingStore:
        return cast(ChangeLoggingStore, self.context.get_store(stream_time_store(self.store_name)))

    def _store(self) -> ChangeLoggingStore:
        return cast(ChangeLoggingStore, self.context.get_store(self.store_name))

    def _load(self) -> dict[bytes, _Entry]:
        if self._entries is None:
            self._entries, self._heap, self._bytes = {}, [], 0
            kept = self._clock().get(_STREAM_TIME)
            self._kept = _NO_TIME if kept is None else kept
            self.observed = max(self.observed, self._kept)
            for kb, (buffer_time, timestamp, value, prior) in self._store().items():
                key = self.key_serde.deserialize(kb)
                self._add(kb, _Entry(key, buffer_time, timestamp, value, 0, prior))
                self.observed = max(self.observed, timestamp)
        return self._entries

    def _keep_stream_time(self) -> None:
        """Store the stream time before the last entry carrying it goes (see the module)."""
        if self._kept < self.observed:
            self._kept = self.observed
            self._clock().put(_STREAM_TIME, self.observed)

    def _add(self, kb: bytes, entry: _Entry) -> None:
        entries = self._entries
        assert entries is not None
        entry.size = len(kb) + 17 + len(repr(entry.value))
        old = entries.get(kb)
        if old is None:
            heapq.heappush(self._heap, (entry.buffer_time, kb))
        else:
            self._bytes -= old.size
        entries[kb] = entry
        self._bytes += entry.size

    def process(self, key: Any, value: Any) -> None:
        ts = self.context.timestamp
        if not self.final and self.delay == 0:
            self.context.forward(key, value)  # until_time_limit(0): no suppression
            return
        entries = self._load()
        self.observed = max(self.observed, ts)
        kb = self.key_serde.serialize(key)
        if kb is None:
            self._keep_stream_time()
            return
        kb = bytes(kb)
        existing = entries.get(kb)
        if existing is not None and existing.timestamp > ts:
            self._keep_stream_time()
        change = as_change(value)
        if existing is None:
            buffer_time, prior = self.buffer_time(key, ts), change.old
        else:  # Kafka's non-resetting buffer: the first update's time and prior value stay
            buffer_time, prior = existing.buffer_time, existing.prior
        self._add(kb, _Entry(key, buffer_time, ts, change.new, 0, prior))
        self._store().put(kb, (buffer_time, ts, change.new, prior))
        self._emit_due(self.observed - self.delay)  # Kafka: due entries first, then capacity
        self._enforce_capacity()

    def _over(self) -> bool:
        cfg = self.suppressed.buffer
        entries = self._entries or {}
        return (cfg.max_records is not None and len(entries) > cfg.max_records) or (
            cfg.max_bytes is not None and self._bytes > cfg.max_bytes
        )

    def _enforce_capacity(self) -> None:
        if not self._over():
            return
        if self.suppressed.buffer.strict:
            raise BufferFullError(
                f"suppression buffer {self.store_name} exceeded its max capacity "
                f"({self.suppressed.buffer}); use a larger buffer or emit_early_when_full()"
            )
        while self._over() and self._heap:
            self._emit_one()

    def _emit_due(self, threshold: int) -> None:
        while self._heap and self._heap[0][0] <= threshold:
            self._emit_one()

    def _emit_one(self) -> None:
        entries = self._entries
        assert entries is not None
        buffer_time, kb = heapq.heappop(self._heap)
        entry = entries.get(kb)
        if entry is None or entry.buffer_time != buffer_time:
            return  # a stale heap slot
        if entry.timestamp == self.observed:
            self._keep_stream_time()
        del entries[kb]
        self._bytes -= entry.size
        self._store().delete(kb)
        if self.final and entry.value is None:
            return
        # as Kafka: with the buffered record's timestamp, not the one that made it due
        self.context.forward(entry.key, Change(entry.value, entry.prior), timestamp=entry.timestamp)
