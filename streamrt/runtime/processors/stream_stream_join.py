"""The windowed KStream-KStream join (inner, left, outer), with Kafka Streams' semantics.

Each side buffers its records in a window store (retention: before + after + grace) and looks
the key up in the other side's; left/outer results without a partner wait in a shared store
until their window closes. Both sides of one join in one task share one stream time.

The stream time and each buffer's observed time are kept in the side's own buffer store (a
4-byte row; a record's row has at least 16 bytes) and read back at the first record after the
task opens, so a reopened or restored task goes on as the live one, and a dirty close (its
staged writes dropped) leaves none of the aborted records' time behind. The sequence number
that keeps records of one key and timestamp apart goes on from the largest one stored.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from streamrt.runtime.processor import Processor, ProcessorContext
from streamrt.runtime.processors.join_windows import JoinKind, JoinWindows, KeyJoiner
from streamrt.serde import Serde

__all__ = (
    "LEFT",
    "RIGHT",
    "StreamJoinSpec",
    "StreamStreamJoinSide",
    "Trackers",
    "window_store_entries",
)


_U32 = struct.Struct(">I")
_TS = struct.Struct(">q")
LEFT, RIGHT = 0, 1


def _window_key(key: bytes, ts: int, seq: int) -> bytes:
    return _U32.pack(len(key)) + key + _TS.pack(ts) + _U32.pack(seq)


def _split_window_key(raw: bytes) -> tuple[bytes, int]:
    (n,) = _U32.unpack_from(raw, 0)
    return raw[4 : 4 + n], _TS.unpack_from(raw, 4 + n)[0]


# The side byte of a pending entry: Kafka's TimestampedKeyAndJoinSide orders (ts, side, key)
# with the right side first. Older streamrt wrote 0 (left) / 1 (right); those still read.
_SIDE_BYTE = {LEFT: 3, RIGHT: 2}
_LEGACY_SIDE_BYTE = {LEFT: 0, RIGHT: 1}
_JAVA_LONG_MAX = 2**63 - 1
_CLOCK = b"\xff\xff\xff\xff"  # (stream time, this buffer's observed time) of a side
_CLOCK_VALUE = struct.Struct(">qq")
_ROW_MIN = 16  # length + key + timestamp + sequence: a record's row is never shorter


def _pending_key(ts: int, side: int, key: bytes) -> bytes:
    return _TS.pack(ts) + bytes([_SIDE_BYTE[side]]) + key


def _legacy_pending_key(ts: int, side: int, key: bytes) -> bytes:
    return _TS.pack(ts) + bytes([_LEGACY_SIDE_BYTE[side]]) + key


def _side_of(byte: int) -> int:
    return LEFT if byte in (_SIDE_BYTE[LEFT], _LEGACY_SIDE_BYTE[LEFT]) else RIGHT


def _java_add(*terms: int) -> int:
    """A sum with Java's long overflow (Kafka's ``minTime + after + grace`` with minTime at
    Long.MAX_VALUE wraps negative, so an emptied tracker always scans)."""
    total = sum(terms) & (2**64 - 1)
    return total - 2**64 if total > _JAVA_LONG_MAX else total


def _pack_list(values: list[bytes]) -> bytes:
    return b"".join(_U32.pack(len(v)) + v for v in values)


def _unpack_list(raw: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(raw):
        (n,) = _U32.unpack_from(raw, pos)
        out.append(raw[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out


@dataclass(slots=True)
class _TimeTracker:
    """Stream time shared by both sides of one join in one task (max ts over both)."""

    stream_time: int = -1
    next_purge: int = 0
    # the lowest pending timestamp as Kafka tracks it (a hint for when to scan; not persisted)
    min_time: int = _JAVA_LONG_MAX
    # each side's buffer keeps its own observed time (max ts put), as a window store does
    put_time: list[int] = field(default_factory=lambda: [-1, -1])
    loaded: bool = False  # the times were read back from the stores


@dataclass(slots=True)
class Trackers:
    by_task: dict[str, _TimeTracker] = field(default_factory=dict)

    def get(self, task_id: str) -> _TimeTracker:
        return self.by_task.setdefault(task_id, _TimeTracker())

    def fresh(self, task_id: str) -> _TimeTracker:
        """The task's tracker, reset as its (re)opening sides init (both share the one
        object): its times come from its stores."""
        tracker = self.get(task_id)
        tracker.stream_time, tracker.next_purge, tracker.min_time = -1, 0, _JAVA_LONG_MAX
        tracker.put_time, tracker.loaded = [-1, -1], False
        return tracker


@dataclass(frozen=True, slots=True)
class StreamJoinSpec:
    windows: JoinWindows
    joiner: KeyJoiner  # (key, left, right)
    kind: JoinKind
    key_serde: Serde[Any]
    left_serde: Serde[Any]
    right_serde: Serde[Any]
    left_store: str
    right_store: str
    pending_store: str | None  # left/outer: non-joined records wait here until windows close
    trackers: Trackers


class StreamStreamJoinSide(Processor):
    """One side of a windowed join: look the key up in the other side's window store, then
    buffer this record in its own (retention = before + after + grace)."""

    def __init__(self, spec: StreamJoinSpec, side: int) -> None:
        self.spec = spec
        self.side = side
        w = spec.windows
        # the window around this side's record, in the other side's time
        self.lo, self.hi = (w.before_ms, w.after_ms) if side == LEFT else (w.after_ms, w.before_ms)
        self.outer = spec.kind == "outer" or (spec.kind == "left" and side == LEFT)
        self.this_serde = spec.left_serde if side == LEFT else spec.right_serde
        self.other_serde = spec.right_serde if side == LEFT else spec.left_serde
        self.seq: int | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        spec = self.spec
        mine, other = (
            (spec.left_store, spec.right_store)
            if self.side == LEFT
            else (spec.right_store, spec.left_store)
        )
        self.mine = context.get_store(mine)
        self.other = context.get_store(other)
        self.pending = context.get_store(spec.pending_store) if spec.pending_store else None
        self.tracker = spec.trackers.fresh(context.task_id)  # both sides: before any record
        self.seq = None  # read back at the first put

    def _join(self, key: Any, this: Any, other: Any) -> Any:
        if self.side == LEFT:
            return self.spec.joiner(key, this, other)
        return self.spec.joiner(key, other, this)

    def process(self, key: Any, value: Any) -> None:
        ctx = self.context
        ts = ctx.timestamp
        tracker = self._loaded_tracker()
        # as Kafka: every record advances the join's stream time, a skipped one too
        moved = ts > tracker.stream_time  # the times row is written once per record
        tracker.stream_time = max(tracker.stream_time, ts)
        if key is None or value is None:
            if moved:
                self._keep_times()
            if key is None and value is not None and self.outer:  # KIP-962: at once, unstored
                ctx.forward(key, self._join(key, value, None))
            return
        now = tracker.stream_time
        retention = self.spec.windows.retention_ms
        if self.pending is not None and ts == now:
            self._emit_closed(now)
        kb = self.spec.key_serde.serialize(key) or b""
        if not self._join_matches(key, value, kb, ts) and self.outer:
            self._not_joined(key, value, kb, ts, now)
        mine_time = max(tracker.put_time[self.side], ts)
        if ts > mine_time - retention:  # older than the retention: the store would drop it
            moved = moved or mine_time > tracker.put_time[self.side]
            tracker.put_time[self.side] = mine_time
            self.seq = 1 + (self._stored_seq() if self.seq is None else self.seq)
            self.mine.put(_window_key(kb, ts, self.seq), self.this_serde.serialize(value) or b"")
        if moved:
            self._keep_times()
        if now >= tracker.next_purge:
            self._purge(tracker.put_time, retention)
            tracker.next_purge = now + max(retention // 2, 1)

    def _loaded_tracker(self) -> _TimeTracker:
        """The shared tracker, its times read from both buffers at the first record (the
        stores are restored by then)."""
        tracker = self.tracker
        if not tracker.loaded:
            tracker.loaded = True
            for side, store in ((self.side, self.mine), (1 - self.side, self.other)):
                raw = store.get(_CLOCK)
                if raw is not None:
                    stream_time, put_time = _CLOCK_VALUE.unpack(raw)
                    tracker.stream_time = max(tracker.stream_time, stream_time)
                    tracker.put_time[side] = max(tracker.put_time[side], put_time)
        return tracker

    def _keep_times(self) -> None:
        tracker = self.tracker
        self.mine.put(_CLOCK, _CLOCK_VALUE.pack(tracker.stream_time, tracker.put_time[self.side]))

    def _stored_seq(self) -> int:
        """The largest sequence number in this side's buffer (0: none)."""
        rows = self.mine.half_open_range(None, None)
        return max((_U32.unpack(raw[-4:])[0] for raw, _ in rows if len(raw) >= _ROW_MIN), default=0)

    def _join_matches(self, key: Any, value: Any, kb: bytes, ts: int) -> bool:
        """Join with the other side's records in the window; whether there was any."""
        retention = self.spec.windows.retention_ms
        lo = max(0, ts - self.lo, self.tracker.put_time[1 - self.side] - retention + 1)
        hi = max(0, ts + self.hi)
        if lo > hi:
            return False
        matched = False
        start = _U32.pack(len(kb)) + kb + _TS.pack(lo)
        end = _U32.pack(len(kb)) + kb + _TS.pack(hi + 1)
        for raw, vb in list(self.other.half_open_range(start, end)):
            _k, other_ts = _split_window_key(raw)
            matched = True
            if self.pending is not None:  # the other record found a partner after all
                self.pending.delete(_pending_key(other_ts, 1 - self.side, kb))
                self.pending.delete(_legacy_pending_key(other_ts, 1 - self.side, kb))
            other_value = self.other_serde.deserialize(vb)
            joined = self._join(key, value, other_value)
            self.context.forward(key, joined, timestamp=max(ts, other_ts))
        return matched

    def _not_joined(self, key: Any, value: Any, kb: bytes, ts: int, now: int) -> None:
        """No partner: emit at once if the window already closed, else wait in the store."""
        if self.pending is None or max(0, ts + self.hi) < now:
            self.context.forward(key, self._join(key, value, None))
            return
        self.tracker.min_time = min(self.tracker.min_time, ts)
        pk = _pending_key(ts, self.side, kb)
        vb = self.this_serde.serialize(value) or b""
        self.pending.put(pk, _pack_list([*_unpack_list(self.pending.get(pk) or b""), vb]))

    def _emit_closed(self, now: int) -> None:
        """Emit non-joined records whose window (plus grace) closed, in (ts, right before
        left, key) order. As Kafka, the scan runs only if the lowest pending timestamp plus
        *this* side's ``after`` plus grace is behind stream time."""
        assert self.pending is not None
        w = self.spec.windows
        tracker = self.tracker
        if _java_add(tracker.min_time, self.hi, w.grace_ms) >= now:
            return
        tracker.min_time = _JAVA_LONG_MAX
        for pk, raw in list(self.pending.half_open_range(None, None)):
            ets = _TS.unpack_from(pk, 0)[0]
            tracker.min_time = ets
            side = _side_of(pk[8])
            # left records wait for right ones up to ts + after; right ones up to ts + before
            reach = w.after_ms if side == LEFT else w.before_ms
            if ets + reach + w.grace_ms >= now:
                continue
            key = self.spec.key_serde.deserialize(pk[9:])
            serde = self.spec.left_serde if side == LEFT else self.spec.right_serde
            for vb in _unpack_list(raw):
                v = serde.deserialize(vb)
                joiner = self.spec.joiner
                result = joiner(key, v, None) if side == LEFT else joiner(key, None, v)
                self.context.forward(key, result, timestamp=ets)
            self.pending.delete(pk)

    def _purge(self, put_time: list[int], retention: int) -> None:
        """Drop buffered records older than each store's retention (Kafka drops segments)."""
        stores = {self.side: self.mine, 1 - self.side: self.other}
        for side, store in stores.items():
            expired_before = put_time[side] - retention + 1
            for raw, _vb in list(store.half_open_range(None, None)):
                if len(raw) >= _ROW_MIN and _split_window_key(raw)[1] < expired_before:
                    store.delete(raw)


def window_store_entries(store: Any) -> Iterator[tuple[bytes, int, bytes]]:
    """(key bytes, ts, value bytes) of a join buffer, for tests and debugging."""
    for raw, vb in store.half_open_range(None, None):
        if len(raw) < _ROW_MIN:
            continue  # the times row
        kb, ts = _split_window_key(raw)
        yield kb, ts, vb
