"""The KTable-KTable join on the key (inner, left, outer): each side's updates are joined with
the other side's current value; Change in and out."""

from __future__ import annotations

from typing import Any

from streamrt.runtime.graph.nodes import Closers, TimedGet, ValueGetter
from streamrt.runtime.processor import Change, Processor, ProcessorContext, ValueAndTimestamp
from streamrt.runtime.processors.join_windows import Joiner, JoinKind
from streamrt.runtime.processors.tables import as_change

__all__ = ("TableJoinSide", "joined_getter")


class TableJoinSide(Processor):
    """One side's updates joined with the other side's current value (Change in and out)."""

    def __init__(self, other: ValueGetter, joiner: Joiner, kind: JoinKind, is_left: bool):
        self.other_getter = other
        self.joiner = joiner
        self.kind = kind
        self.is_left = is_left

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.reader = self.other_getter.open(context)
        self.get = self.reader.timed

    def close(self) -> None:
        self.reader.close()

    def _join(self, this: Any, other: Any) -> Any:
        return self.joiner(this, other) if self.is_left else self.joiner(other, this)

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        change = as_change(value)
        if not change.is_latest:  # an out-of-order version: Kafka joins only the latest
            return
        found = self.get(key)
        other = None if found is None else found.value
        # Kafka: the result carries max(this update's, the other row's timestamp)
        ts = (
            self.context.timestamp
            if found is None
            else max(self.context.timestamp, found.timestamp)
        )
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
        self.context.forward(key, Change(new, old), timestamp=ts)


def joined_getter(
    left: ValueGetter, right: ValueGetter, joiner: Joiner, kind: JoinKind
) -> ValueGetter:
    """Reads of an unmaterialized join result: the join of both sides' current rows, with
    the larger of their timestamps (Kafka's join value getters)."""
    stores = tuple(dict.fromkeys(left.stores + right.stores))

    def make(ctx: ProcessorContext, closers: Closers) -> TimedGet:
        lget, rget = left.build(ctx, closers), right.build(ctx, closers)

        def joined(key: Any) -> ValueAndTimestamp | None:
            lf, rf = lget(key), rget(key)
            if lf is None and (kind != "outer" or rf is None):
                return None
            if rf is None and kind == "inner":
                return None
            lv, rv = (None if f is None else f.value for f in (lf, rf))
            ts = max(f.timestamp for f in (lf, rf) if f is not None)
            return ValueAndTimestamp(joiner(lv, rv), ts)

        return joined

    return ValueGetter(stores, make)
