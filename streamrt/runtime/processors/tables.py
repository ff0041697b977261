"""The table operators: source, filter, map_values, materialize and the group_by re-keying.

Table nodes forward :class:`Change` values (new and old), as Kafka Streams' ``Change<V>``: a
filter turns a failed predicate into a tombstone, a grouped table subtracts the old value from
its old group and adds the new one to the new group (see :mod:`.aggregate`). A table without a
store of its own is read through a value getter that recomputes from its parent's store
(:func:`filter_getter`, :func:`map_values_getter`), so it must compute what its processor does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamrt.errors import StreamrtError
from streamrt.runtime.graph.nodes import Closers, TimedGet, ValueGetter
from streamrt.runtime.processor import (
    Change,
    Processor,
    ProcessorContext,
    TupleForwarder,
    ValueAndTimestamp,
)
from streamrt.runtime.versioned_stores import LATEST, NOT_PUT, VersionedStoreView

__all__ = (
    "TableFilterProcessor",
    "TableMapValuesProcessor",
    "TableMaterializeProcessor",
    "TableRepartitionMapProcessor",
    "TableSourceProcessor",
    "as_change",
    "filter_getter",
    "map_values_getter",
)


def as_change(value: Any) -> Change:
    """A parent that forwards plain values (an older table node) means ``Change(value)``."""
    return value if isinstance(value, Change) else Change(value, None)


class _StoringProcessor(Processor):
    """Writes the result to its store (if materialized) before forwarding the Change."""

    def __init__(self, store: str | None) -> None:
        self.store_name = store

    def emit(self, key: Any, change: Change) -> None:
        if self.store_name is not None:
            store = self.context.get_store(self.store_name)
            if change.new is None:
                store.delete(key)
            else:
                store.put(key, change.new)
        self.context.forward(key, change)


class TableFilterProcessor(_StoringProcessor):
    """A failed predicate forwards a tombstone. Only when old values are sent downstream (a
    grouping, a suppress, a left/outer join asked for them) is an update whose new and old
    results are both null dropped, as Kafka's ``KTableFilter``: a plain ``to_stream`` sees the
    tombstone."""

    def __init__(
        self,
        predicate: Callable[[Any, Any], bool],
        negate: bool,
        store: str | None,
        send_old_values: bool = True,
    ):
        super().__init__(store)
        self.predicate = predicate
        self.negate = negate
        self.send_old_values = send_old_values

    def keep(self, key: Any, value: Any) -> Any:
        if value is None or bool(self.predicate(key, value)) == self.negate:
            return None
        return value

    def process(self, key: Any, value: Any) -> None:
        change = as_change(value)
        new, old = self.keep(key, change.new), self.keep(key, change.old)
        if new is None and old is None and self.send_old_values:
            return
        self.emit(key, Change(new, old, change.is_latest))


class TableMapValuesProcessor(_StoringProcessor):
    """``fn(key, value)`` of each new and old value (a value mapper, with or without key)."""

    def __init__(self, fn: Callable[[Any, Any], Any], store: str | None) -> None:
        super().__init__(store)
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        change = as_change(value)
        new = None if change.new is None else self.fn(key, change.new)
        old = None if change.old is None else self.fn(key, change.old)
        self.emit(key, Change(new, old, change.is_latest))


class TableMaterializeProcessor(_StoringProcessor):
    """Stores a Change stream's new values (a join result given a store name). Asked for old
    values, it sends the value its store held (Kafka's materialized join result), so a
    re-grouping subtracts what it added before."""

    def __init__(self, store: str, send_old_values: bool = False) -> None:
        super().__init__(store)
        self.send_old_values = send_old_values

    def process(self, key: Any, value: Any) -> None:
        change = as_change(value)
        if self.send_old_values and self.store_name is not None:
            old = self.context.get_store(self.store_name).get(key)
            change = Change(change.new, old, change.is_latest)
        self.emit(key, change)


class TableRepartitionMapProcessor(Processor):
    """``KTable.group_by``: the old value leaves its old group, the new joins its new one."""

    def __init__(self, selector: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.selector = selector

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            raise StreamrtError("KTable.group_by: a table record has a null key")
        change = as_change(value)
        if not change.is_latest:  # an out-of-order version: Kafka regroups only the latest
            return
        new = None if change.new is None else self.selector(key, change.new)
        old = None if change.old is None else self.selector(key, change.old)
        if new is not None and (new[0] is None or new[1] is None):
            new = None
        if old is not None and (old[0] is None or old[1] is None):
            old = None
        if new is not None and old is not None and new[0] == old[0]:
            self.context.forward(new[0], Change(new[1], old[1]))
            return
        if old is not None:  # first the subtraction at the old key, then the addition
            self.context.forward(old[0], Change(None, old[1]))
        if new is not None:
            self.context.forward(new[0], Change(new[1], None))


class TableSourceProcessor(Processor):
    """Materialises a compacted topic into a store (``app.table``); tombstones delete."""

    def __init__(self, store: str) -> None:
        self.store_name = store

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.forwarder = TupleForwarder(context, self.store_name)

    def process(self, key: Any, value: Any) -> None:
        if key is None:  # as Kafka Streams: a table record needs a key
            return
        store = self.context.get_store(self.store_name)
        old = store.get(key)
        view: object = store  # a versioned view's put answers whether it stored the version
        if isinstance(view, VersionedStoreView):
            valid_to = view.put(key, value)
            if valid_to != NOT_PUT:  # else older than its history: Kafka drops it
                self.forwarder.maybe_forward(key, value, old, is_latest=valid_to == LATEST)
            return
        if value is None:
            store.delete(key)
        else:
            store.put(key, value)
        self.forwarder.maybe_forward(key, value, old)  # non-table children get ``value``


def filter_getter(
    parent: ValueGetter, predicate: Callable[[Any, Any], bool], negate: bool
) -> ValueGetter:
    """Reads of a filtered table: the parent's row if it passes, else None."""

    def make(ctx: ProcessorContext, closers: Closers) -> TimedGet:
        get = parent.build(ctx, closers)

        def filtered(key: Any) -> ValueAndTimestamp | None:
            found = get(key)
            ok = found is not None and bool(predicate(key, found.value)) != negate
            return found if ok else None

        return filtered

    return ValueGetter(parent.stores, make)


def map_values_getter(parent: ValueGetter, fn: Callable[[Any, Any], Any]) -> ValueGetter:
    """Reads of a mapped table: ``fn(key, value)`` of the parent's value, with its timestamp."""

    def make(ctx: ProcessorContext, closers: Closers) -> TimedGet:
        get = parent.build(ctx, closers)

        def mapped(key: Any) -> ValueAndTimestamp | None:
            found = get(key)
            if found is None:
                return None
            return ValueAndTimestamp(fn(key, found.value), found.timestamp)

        return mapped

    return ValueGetter(parent.stores, make)
