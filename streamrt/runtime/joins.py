"""Joins: KStream-KTable, KStream-KStream (windowed) and KTable-KTable, with Kafka Streams'
semantics (see docs/dsl.md). Foreign-key and global-table joins live in ``fk_join`` and
``global_table``.

Every join here needs co-partitioned inputs: the DSL repartitions a side whose key changed and
records the sources of both sides as a co-partition group, checked at start-up.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from streamrt.errors import ConfigError
from streamrt.runtime.processor import Change, Processor, ProcessorContext
from streamrt.runtime.tables import (
    MaterializedLike,
    TableMaterializeProcessor,
    ValueGetter,
    as_change,
    materialize,
    store_getter,
)
from streamrt.runtime.topology import StoreSpec, Topology
from streamrt.serde import BytesSerde, Serde
from streamrt.state.store import IN_MEMORY, ROCKS_DB

__all__ = ("JoinKind", "JoinWindows", "stream_stream_join", "stream_table_join", "table_join")

KStream = Any  # runtime.dsl.KStream: not imported, as runtime.dsl imports this module
KTable = Any  # runtime.dsl.KTable: not imported, as runtime.dsl imports this module

JoinKind = Literal["inner", "left", "outer"]
Joiner = Callable[[Any, Any], Any]


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """A right record r joins a left record l iff ``l.ts - before <= r.ts <= l.ts + after``.

    Records stay joinable (and left/outer results wait) until stream time passes their window
    end plus ``grace_ms``. Negative values are refused when the windows are built.
    """

    before_ms: int
    after_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.before_ms + self.after_ms < 0:
            raise ConfigError(
                f"JoinWindows: before + after must be >= 0, got {self.before_ms} + {self.after_ms}"
            )
        if self.grace_ms < 0:
            raise ConfigError(f"JoinWindows: grace must be >= 0, got {self.grace_ms}")

    @classmethod
    def of_time_difference_with_no_grace(cls, difference_ms: int) -> JoinWindows:
        return cls.of_time_difference_and_grace(difference_ms, 0)

    @classmethod
    def of_time_difference_and_grace(cls, difference_ms: int, grace_ms: int) -> JoinWindows:
        if difference_ms < 0:
            raise ConfigError(f"JoinWindows: time difference must be >= 0, got {difference_ms}")
        return cls(difference_ms, difference_ms, grace_ms)

    of_time_difference = of_time_difference_with_no_grace

    def before(self, ms: int) -> JoinWindows:
        return replace(self, before_ms=ms)

    def after(self, ms: int) -> JoinWindows:
        return replace(self, after_ms=ms)

    def grace(self, ms: int) -> JoinWindows:
        return replace(self, grace_ms=ms)

    @property
    def size_ms(self) -> int:
        return self.before_ms + self.after_ms

    @property
    def retention_ms(self) -> int:
        return self.before_ms + self.after_ms + self.grace_ms


# -- KStream-KTable --------------------------------------------------------------------------


class StreamTableJoinProcessor(Processor):
    """Only stream records produce output; the result keeps the stream record's ts/headers."""

    def __init__(self, getter: ValueGetter, joiner: Joiner, left: bool) -> None:
        self.getter = getter
        self.joiner = joiner
        self.left = left

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.get = self.getter.make(context)

    def process(self, key: Any, value: Any) -> None:
        if value is None:
            return
        if key is None:
            if self.left:
                self.context.forward(key, self.joiner(value, None))
            return
        other = self.get(key)
        if other is None and not self.left:
            return
        self.context.forward(key, self.joiner(value, other))


def _co_partition(topology: Topology, *nodes: str) -> None:
    group = frozenset().union(*(topology.source_ancestors(n) for n in nodes))
    if len(group) > 1:
        topology.copartition_groups.append(group)


def stream_table_join(
    stream: KStream, table: KTable, joiner: Joiner, left: bool, name: str | None
) -> KStream:
    if stream.key_changed:  # a table is never repartitioned automatically, the stream is
        stream = stream._repartition(name and f"{name}-left")
    topology = stream.topology
    getter = table.getter
    node = topology.add_processor(
        name or topology.new_name("KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN"),
        lambda: StreamTableJoinProcessor(getter, joiner, left),
        stream.node,
        stores=getter.stores,
    )
    _co_partition(topology, stream.node, table.node)
    return type(stream)(topology, node, stream.key_serde, stream.value_serde)


# -- KStream-KStream -------------------------------------------------------------------------

_U32 = struct.Struct(">I")
_TS = struct.Struct(">q")
_LEFT, _RIGHT = 0, 1


def _window_key(key: bytes, ts: int, seq: int) -> bytes:
    return _U32.pack(len(key)) + key + _TS.pack(ts) + _U32.pack(seq)


def _split_window_key(raw: bytes) -> tuple[bytes, int]:
    (n,) = _U32.unpack_from(raw, 0)
    return raw[4 : 4 + n], _TS.unpack_from(raw, 4 + n)[0]


def _pending_key(ts: int, side: int, key: bytes) -> bytes:
    return _TS.pack(ts) + bytes([side]) + key


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
    # each side's buffer keeps its own observed time (max ts put), as a window store does
    put_time: list[int] = field(default_factory=lambda: [-1, -1])


@dataclass(slots=True)
class _Trackers:
    by_task: dict[str, _TimeTracker] = field(default_factory=dict)

    def get(self, task_id: str) -> _TimeTracker:
        return self.by_task.setdefault(task_id, _TimeTracker())


@dataclass(frozen=True, slots=True)
class _StreamJoinSpec:
    windows: JoinWindows
    joiner: Joiner
    kind: JoinKind
    key_serde: Serde[Any]
    left_serde: Serde[Any]
    right_serde: Serde[Any]
    left_store: str
    right_store: str
    pending_store: str | None  # left/outer: non-joined records wait here until windows close
    trackers: _Trackers


class StreamStreamJoinSide(Processor):
    """One side of a windowed join: look the key up in the other side's window store, then
    buffer this record in its own (retention = before + after + grace)."""

    def __init__(self, spec: _StreamJoinSpec, side: int) -> None:
        self.spec = spec
        self.side = side
        w = spec.windows
        # the window around this side's record, in the other side's time
        self.lo, self.hi = (w.before_ms, w.after_ms) if side == _LEFT else (w.after_ms, w.before_ms)
        self.outer = spec.kind == "outer" or (spec.kind == "left" and side == _LEFT)
        self.this_serde = spec.left_serde if side == _LEFT else spec.right_serde
        self.other_serde = spec.right_serde if side == _LEFT else spec.left_serde
        self.seq = 0

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        spec = self.spec
        mine, other = (
            (spec.left_store, spec.right_store)
            if self.side == _LEFT
            else (spec.right_store, spec.left_store)
        )
        self.mine = context.get_store(mine)
        self.other = context.get_store(other)
        self.pending = context.get_store(spec.pending_store) if spec.pending_store else None
        self.tracker = spec.trackers.get(context.task_id)

    def _join(self, this: Any, other: Any) -> Any:
        if self.side == _LEFT:
            return self.spec.joiner(this, other)
        return self.spec.joiner(other, this)

    def process(self, key: Any, value: Any) -> None:
        ctx = self.context
        if key is None or value is None:
            if key is None and value is not None and self.outer:  # KIP-962: at once, unstored
                ctx.forward(key, self._join(value, None))
            return
        ts = ctx.timestamp
        tracker = self.tracker
        tracker.stream_time = max(tracker.stream_time, ts)
        now = tracker.stream_time
        retention = self.spec.windows.retention_ms
        if self.pending is not None and ts == now:
            self._emit_closed(now)
        kb = self.spec.key_serde.serialize(key) or b""
        lo = max(0, ts - self.lo, tracker.put_time[1 - self.side] - retention + 1)
        hi = max(0, ts + self.hi)
        matched = False
        if lo <= hi:
            start = _U32.pack(len(kb)) + kb + _TS.pack(lo)
            end = _U32.pack(len(kb)) + kb + _TS.pack(hi + 1)
            for raw, vb in list(self.other.range(start, end)):
                _k, other_ts = _split_window_key(raw)
                matched = True
                other_value = self.other_serde.deserialize(vb)
                ctx.forward(key, self._join(value, other_value), timestamp=max(ts, other_ts))
                if self.pending is not None:  # the other record found a partner after all
                    self.pending.delete(_pending_key(other_ts, 1 - self.side, kb))
        if not matched and self.outer:
            if self.pending is None or ts + self.hi < now:
                ctx.forward(key, self._join(value, None))
            else:
                pk = _pending_key(ts, self.side, kb)
                vb = self.this_serde.serialize(value) or b""
                self.pending.put(pk, _pack_list([*_unpack_list(self.pending.get(pk) or b""), vb]))
        mine_time = max(tracker.put_time[self.side], ts)
        if ts > mine_time - retention:  # older than the retention: the store would drop it
            tracker.put_time[self.side] = mine_time
            self.seq += 1
            self.mine.put(_window_key(kb, ts, self.seq), self.this_serde.serialize(value) or b"")
        if now >= tracker.next_purge:
            self._purge(tracker.put_time, retention)
            tracker.next_purge = now + max(retention // 2, 1)

    def _emit_closed(self, now: int) -> None:
        """Emit non-joined records whose window (plus grace) closed, in timestamp order."""
        assert self.pending is not None
        w = self.spec.windows
        horizon = now - w.grace_ms - min(w.before_ms, w.after_ms)
        if horizon <= 0:
            return
        for pk, raw in list(self.pending.range(None, _TS.pack(horizon))):
            ets = _TS.unpack_from(pk, 0)[0]
            side = pk[8]
            # left records wait for right ones up to ts + after; right ones up to ts + before
            reach = w.after_ms if side == _LEFT else w.before_ms
            if ets + reach + w.grace_ms >= now:
                continue
            key = self.spec.key_serde.deserialize(pk[9:])
            serde = self.spec.left_serde if side == _LEFT else self.spec.right_serde
            for vb in _unpack_list(raw):
                v = serde.deserialize(vb)
                result = self.spec.joiner(v, None) if side == _LEFT else self.spec.joiner(None, v)
                self.context.forward(key, result, timestamp=ets)
            self.pending.delete(pk)

    def _purge(self, put_time: list[int], retention: int) -> None:
        """Drop buffered records older than each store's retention (Kafka drops segments)."""
        stores = {self.side: self.mine, 1 - self.side: self.other}
        for side, store in stores.items():
            expired_before = put_time[side] - retention + 1
            for raw, _vb in list(store.range(None, None)):
                if _split_window_key(raw)[1] < expired_before:
                    store.delete(raw)


def stream_stream_join(
    left: KStream,
    right: KStream,
    joiner: Joiner,
    windows: JoinWindows,
    kind: JoinKind,
    name: str | None,
    in_memory: bool | None,
) -> KStream:
    if not isinstance(windows, JoinWindows):
        raise ConfigError("a KStream-KStream join needs windows=JoinWindows...")
    topology = left.topology
    base = name or topology.new_name(f"KSTREAM-{kind.upper()}JOIN")
    if left.key_changed:
        left = left._repartition(f"{base}-left")
    if right.key_changed:
        right = right._repartition(f"{base}-right")
    kind_of = None if in_memory is None else (IN_MEMORY if in_memory else ROCKS_DB)
    bytes_serde = BytesSerde()
    stores = [f"{base}-this-join-store", f"{base}-other-join-store"]
    if kind != "inner":
        stores.append(f"{base}-{kind}-shared-join-store")
    for store in stores:
        topology.add_store(StoreSpec(store, bytes_serde, bytes_serde, kind_of))
    spec = _StreamJoinSpec(
        windows,
        joiner,
        kind,
        left.key_serde,
        left.value_serde,
        right.value_serde,
        stores[0],
        stores[1],
        stores[2] if kind != "inner" else None,
        _Trackers(),
    )
    this_node = topology.add_processor(
        f"{base}-this", lambda: StreamStreamJoinSide(spec, _LEFT), left.node, stores=tuple(stores)
    )
    other_node = topology.add_processor(
        f"{base}-other",
        lambda: StreamStreamJoinSide(spec, _RIGHT),
        right.node,
        stores=tuple(stores),
    )
    from streamrt.runtime.operators import PassThroughProcessor

    merged = topology.add_processor(f"{base}-merge", PassThroughProcessor, this_node, other_node)
    _co_partition(topology, left.node, right.node)
    return type(left)(topology, merged, left.key_serde, left.value_serde)


# -- KTable-KTable ---------------------------------------------------------------------------


class TableJoinSide(Processor):
    """One side's updates joined with the other side's current value (Change in and out)."""

    def __init__(self, other: ValueGetter, joiner: Joiner, kind: JoinKind, is_left: bool):
        self.other_getter = other
        self.joiner = joiner
        self.kind = kind
        self.is_left = is_left

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.get = self.other_getter.make(context)

    def _join(self, this: Any, other: Any) -> Any:
        return self.joiner(this, other) if self.is_left else self.joiner(other, this)

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        change = as_change(value)
        other = self.get(key)
        join = self._join
        if self.kind == "left" and not self.is_left:  # a right update of a left join
            if other is None:  # no left value: no output
                return
            new, old = join(change.new, other), join(change.old, other)
        elif self.kind == "outer":
            if change.new is None and change.old is None and other is None:
                return
            new = None if change.new is None and other is None else join(change.new, other)
            old = None if change.old is None and other is None else join(change.old, other)
        else:  # inner (both sides) and the left side of a left join
            if other is None and self.kind == "inner":
                return
            if change.new is None and change.old is None and other is None:
                return
            new = None if change.new is None else join(change.new, other)
            old = None if change.old is None else join(change.old, other)
        self.context.forward(key, Change(new, old))


def table_join(
    left: KTable,
    right: KTable,
    joiner: Joiner,
    kind: JoinKind,
    materialized: MaterializedLike,
    value_serde: Serde[Any] | None,
) -> KTable:
    from streamrt.runtime.operators import PassThroughProcessor

    topology = left.topology
    base = topology.new_name(f"KTABLE-{kind.upper()}JOIN")
    lg, rg = left.getter, right.getter
    stores = tuple(dict.fromkeys(lg.stores + rg.stores))
    this = topology.add_processor(
        f"{base}-this",
        lambda: TableJoinSide(rg, joiner, kind, True),
        left.node,
        stores=stores,
        accepts_changes=True,
    )
    other = topology.add_processor(
        f"{base}-other",
        lambda: TableJoinSide(lg, joiner, kind, False),
        right.node,
        stores=stores,
        accepts_changes=True,
    )
    merged = topology.add_processor(
        f"{base}-merge", PassThroughProcessor, this, other, accepts_changes=True
    )
    _co_partition(topology, left.node, right.node)
    vser = value_serde or left.value_serde
    store, kser, vser = materialize(topology, materialized, left.key_serde, vser)

    def make(ctx: ProcessorContext) -> Callable[[Any], Any]:
        lget, rget = lg.make(ctx), rg.make(ctx)

        def joined(key: Any) -> Any:
            lv, rv = lget(key), rget(key)
            if lv is None and (kind != "outer" or rv is None):
                return None
            if rv is None and kind == "inner":
                return None
            return joiner(lv, rv)

        return joined

    if store is None:
        return type(left)(
            topology,
            merged,
            None,
            kser,
            vser,
            getter=ValueGetter(stores, make),
        )
    node = topology.add_processor(
        f"{base}-materialize",
        lambda: TableMaterializeProcessor(store),
        merged,
        stores=(store,),
        accepts_changes=True,
    )
    return type(left)(topology, node, store, kser, vser, getter=store_getter(store))


def window_store_entries(store: Any) -> Iterator[tuple[bytes, int, bytes]]:
    """(key bytes, ts, value bytes) of a join buffer, for tests and debugging."""
    for raw, vb in store.range(None, None):
        kb, ts = _split_window_key(raw)
        yield kb, ts, vb
