"""Segmented window and session stores: bytes stores that expire whole time segments.

A window (or session) store key is ``<record key><start: 8 bytes BE><end: 8 bytes BE>``; that
is also its changelog key. Each entry belongs to the segment ``time // segment_interval``
where ``time`` is the window start (window stores) or end (session stores), as Kafka Streams
segments them. The store tracks its observed stream time (the largest time put); a put older
than the oldest live segment (``stream_time - retention``) is dropped, and every segment before
it is dropped whole. Reads never look below ``stream_time - retention + 1``.

RocksDB layout: one database, data keys ``<segment id: 8 bytes BE><store key>``, so a segment is
one contiguous key range dropped with a single range delete; a metadata column family holds the
changelog offset and the observed stream time, written in the same batch as the data. The
in-memory variant keeps a dict per segment. Both stage writes until :meth:`flush`, like the
key-value stores (read-your-writes; data + offset durable together).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import rocksdict

from streamrt.logs import fields
from streamrt.state.rocksdb_handles import RocksHandles

__all__ = (
    "SegmentSpec",
    "SegmentedStore",
    "WindowEntry",
    "segment_interval_for",
    "split_window_key",
    "window_key",
)

logger = logging.getLogger(__name__)

_WINDOW = struct.Struct(">qq")
_SEG = struct.Struct(">q")
_META_CF = "__metadata__"
_OFFSET_KEY = b"changelog_offset"
_TIME_KEY = b"observed_stream_time"
_DELETED = object()
_NO_TIME = -(2**63)

SegmentBy = Literal["start", "end"]


def segment_interval_for(retention_ms: int) -> int:
    """Kafka Streams' segment interval: ``max(retention / 2, 60000)`` ms."""
    return max(retention_ms // 2, 60_000)


@dataclass(frozen=True, slots=True)
class SegmentSpec:
    """How a segmented store expires data: ``retention_ms``, segments by window start or end."""

    retention_ms: int
    segment_by: SegmentBy = "start"
    segment_interval_ms: int = 0  # 0: segment_interval_for(retention_ms)

    @property
    def interval(self) -> int:
        return self.segment_interval_ms or segment_interval_for(self.retention_ms)


@dataclass(frozen=True, slots=True)
class WindowEntry:
    key: bytes
    start: int
    end: int
    value: bytes


def window_key(key: bytes, start: int, end: int) -> bytes:
    return key + _WINDOW.pack(start, end)


def split_window_key(store_key: bytes) -> tuple[bytes, int, int]:
    if len(store_key) < 16:
        raise ValueError(f"not a window store key: {store_key!r}")
    start, end = _WINDOW.unpack(store_key[-16:])
    return store_key[:-16], start, end


class SegmentedStore(RocksHandles):
    """A segmented bytes store (RocksDB or in memory) implementing the KeyValueStore protocol
    plus time-range fetches; see the module docstring for layout and expiry."""

    def __init__(self, name: str, spec: SegmentSpec, path: Path | None = None) -> None:
        self.name = name
        self.spec = spec
        self.path = path  # None: in memory
        self._db: rocksdict.Rdict | None = None
        self._meta: rocksdict.Rdict | None = None
        self._mem: dict[int, dict[bytes, bytes]] | None = None
        self._mem_offset: int | None = None
        self._mem_time = _NO_TIME
        self._pending: dict[bytes, bytes | object] = {}  # internal key → value | _DELETED
        self._drop_below: int | None = None  # every segment id < this is expired
        self._drop_staged = False  # the next flush range-deletes them
        self._observed = _NO_TIME
        self.dropped_expired = 0

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def persistent(self) -> bool:
        return self.path is not None

    @property
    def is_open(self) -> bool:
        return self._db is not None or self._mem is not None

    def open(self) -> None:
        if self.path is None:
            if self._mem is None:
                self._mem, self._mem_offset, self._mem_time = {}, None, _NO_TIME
            self._observed = self._mem_time
            return
        self._open_handles(self.path, _options)
        raw = self._require_meta().get(_TIME_KEY)
        self._observed = _NO_TIME if raw is None else _SEG.unpack(bytes(raw))[0]

    def close(self) -> None:
        """Close without flushing (see :class:`RocksHandles`); staged writes are dropped."""
        self._close_handles()
        self._mem, self._mem_offset, self._mem_time = None, None, _NO_TIME
        self._pending.clear()
        self._drop_below, self._drop_staged = None, False

    # -- time and segments -----------------------------------------------------------------

    @property
    def observed_stream_time(self) -> int:
        """The largest window time put so far (``-2**63`` before the first put)."""
        return self._observed

    def _segment(self, time: int) -> int:
        return time // self.spec.interval

    def _time_of(self, store_key: bytes) -> int:
        _key, start, end = split_window_key(store_key)
        return start if self.spec.segment_by == "start" else end

    def _min_live_segment(self) -> int | None:
        if self._observed == _NO_TIME:
            return None
        return self._segment(self._observed - self.spec.retention_ms)

    def _min_live_time(self) -> int:
        """The lowest time a read may still return (``stream_time - retention + 1``)."""
        if self._observed == _NO_TIME:
            return _NO_TIME
        return self._observed - self.spec.retention_ms + 1

    def _advance(self, time: int) -> bool:
        """Note ``time``; False if its segment already expired (the write is dropped)."""
        self._observed = max(self._observed, time)
        live = self._min_live_segment()
        assert live is not None
        if self._drop_below is None or live > self._drop_below:
            self._drop_below, self._drop_staged = live, True
            for ikey in [k for k in self._pending if _SEG.unpack(k[:8])[0] < live]:
                del self._pending[ikey]
            if self._mem is not None:
                for seg in [s for s in self._mem if s < live]:
                    del self._mem[seg]
        return self._segment(time) >= live

    # -- KeyValueStore protocol ------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        if self._time_of(key) < self._min_live_time():
            return None
        ikey = _SEG.pack(self._segment(self._time_of(key))) + key
        staged = self._pending.get(ikey)
        if staged is _DELETED:
            return None
        if isinstance(staged, bytes):
            return staged
        if self._mem is not None:
            return self._mem.get(_SEG.unpack(ikey[:8])[0], {}).get(key)
        value = self._require_db().get(ikey)
        return None if value is None else bytes(value)

    def put(self, key: bytes, value: bytes) -> None:
        time = self._time_of(key)
        if not self._advance(time):
            self.dropped_expired += 1
            logger.debug("skipping a write to an expired segment", extra=fields(store=self.name))
            return
        self._pending[_SEG.pack(self._segment(time)) + key] = value

    def delete(self, key: bytes) -> None:
        time = self._time_of(key)
        live = self._min_live_segment()
        if live is not None and self._segment(time) < live:
            return
        self._pending[_SEG.pack(self._segment(time)) + key] = _DELETED

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every live entry (store keys), by segment then key."""
        for skey, value in self._live_items():
            if self._time_of(skey) >= self._min_live_time():
                yield skey, value

    def _live_items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every entry of the live segments (store keys), by segment then key."""
        for segment in self._live_segments():
            for ikey, value in self._scan(_SEG.pack(segment), _SEG.pack(segment + 1)):
                yield ikey[8:], value

    def range(self, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Store keys in ``[start, end)``, ascending (a full scan; used by tools, not hot)."""
        selected = sorted(
            (k, v)
            for k, v in self.items()
            if (start is None or k >= start) and (end is None or k < end)
        )
        return iter(selected)

    def flush(self, changelog_offset: int | None) -> None:
        if self._mem is not None:
            self._flush_memory(changelog_offset)
            return
        db = self._require_db()
        batch = rocksdict.WriteBatch(raw_mode=True)
        if self._drop_staged and self._drop_below is not None and self._drop_below > 0:
            batch.delete_range(_SEG.pack(0), _SEG.pack(self._drop_below))  # ids < 0 pack high
        for ikey, value in self._pending.items():
            if value is _DELETED:
                batch.delete(ikey)
            else:
                batch.put(ikey, value)
        handle = db.get_column_family_handle(_META_CF)
        if self._observed != _NO_TIME:
            batch.put(_TIME_KEY, _SEG.pack(self._observed), handle)
        if changelog_offset is not None:
            batch.put(_OFFSET_KEY, _SEG.pack(changelog_offset), handle)
        if not batch.is_empty():
            db.write(batch)
        self._pending.clear()
        self._drop_staged = False

    def discard(self) -> None:
        """Drop staged writes (an aborted transaction): reads and stream time go back to the
        last flush. Segments an in-memory store already dropped stay dropped (an approximation:
        only records beyond retention at the discarded stream time are affected)."""
        self._pending.clear()
        self._drop_below, self._drop_staged = None, False
        if self._mem is not None:
            self._observed = self._mem_time
            return
        raw = self._require_meta().get(_TIME_KEY)
        self._observed = _NO_TIME if raw is None else _SEG.unpack(bytes(raw))[0]

    def _flush_memory(self, changelog_offset: int | None) -> None:
        mem = self._mem
        assert mem is not None
        for ikey, value in self._pending.items():
            segment = mem.setdefault(_SEG.unpack(ikey[:8])[0], {})
            if isinstance(value, bytes):
                segment[ikey[8:]] = value
            else:
                segment.pop(ikey[8:], None)
        self._pending.clear()
        self._mem_time = self._observed
        if changelog_offset is not None:
            self._mem_offset = changelog_offset

    def write_batch(self, records: Iterable[tuple[bytes, bytes | None]], next_offset: int) -> None:
        """Restore changelog records (``None`` deletes); expired ones are skipped."""
        if self._pending:
            raise RuntimeError(f"state store {self.name}: restore interleaved with processing")
        for key, value in records:
            if value is None:
                self.delete(key)
            else:
                self.put(key, value)
        self.flush(next_offset)

    def changelog_offset(self) -> int | None:
        if self._mem is not None:
            return self._mem_offset
        raw = self._require_meta().get(_OFFSET_KEY)
        return None if raw is None else int(_SEG.unpack(bytes(raw))[0])

    # -- time-range reads ------------------------------------------------------------------

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        """Entries of ``key`` whose segment time (start or end) is in ``[time_from, time_to]``,
        ascending by (start, end); the lower bound is raised to the oldest live time."""
        low = max(time_from, self._min_live_time())
        if low > time_to or self._observed == _NO_TIME:
            return
        first = self._segment(low)
        last = min(self._segment(time_to), self._segment(self._observed))
        want = len(key) + 16
        for segment in range(first, last + 1):
            prefix = _SEG.pack(segment) + key
            for ikey, value in self._scan(prefix, prefix + b"\xff" * 17):
                skey = ikey[8:]
                if len(skey) != want or not skey.startswith(key):
                    continue
                _k, start, end = split_window_key(skey)
                time = start if self.spec.segment_by == "start" else end
                if low <= time <= time_to:
                    yield WindowEntry(key, start, end, value)

    def fetch_all(
        self, time_from: int, time_to: int, *, whole_segments: bool = False
    ) -> Iterator[WindowEntry]:
        """Every key's entries with segment time in ``[time_from, time_to]``;
        ``whole_segments``: also those below the retention floor in a live segment (Kafka's
        time-ordered session store reads so)."""
        low = time_from if whole_segments else max(time_from, self._min_live_time())
        for skey, value in self._live_items():
            key, start, end = split_window_key(skey)
            time = start if self.spec.segment_by == "start" else end
            if low <= time <= time_to:
                yield WindowEntry(key, start, end, value)

    def _live_segments(self) -> list[int]:
        if self._observed == _NO_TIME:
            return []
        live = self._min_live_segment()
        assert live is not None
        return list(range(live, self._segment(self._observed) + 1))

    def _scan(self, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Internal keys in ``[start, end)`` with staged writes merged, ascending."""
        merged: dict[bytes, bytes | object] = {}
        if self._mem is not None:
            segment = _SEG.unpack(start[:8])[0]
            for skey, value in self._mem.get(segment, {}).items():
                ikey = start[:8] + skey
                if start <= ikey < end:
                    merged[ikey] = value
        else:
            for k, v in self._require_db().items(from_key=start):
                ikey = bytes(k)  # type: ignore[arg-type]  # raw mode: keys are bytes
                if ikey >= end:
                    break
                merged[ikey] = bytes(v)
        merged.update((k, v) for k, v in self._pending.items() if start <= k < end)
        for ikey in sorted(merged):
            found = merged[ikey]
            if isinstance(found, bytes):
                yield ikey, found


def _options() -> rocksdict.Options:
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    return options
