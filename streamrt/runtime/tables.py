"""KTable operations: filter, map_values, group_by + aggregate/reduce/count, materialization.

Table nodes forward :class:`Change` values (new and old), as Kafka Streams' ``Change<V>``: a
filter turns a failed predicate into a tombstone, a grouped table subtracts the old value from
its old group and adds the new one to the new group. A table without a store of its own is read
through a :class:`ValueGetter` that recomputes from its parent's store (Kafka's value getters),
so only tables given a ``materialized`` name cost a store and a changelog.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamrt.errors import ConfigError, StreamrtError
from streamrt.runtime.processor import Change, Processor, ProcessorContext
from streamrt.runtime.topology import REPARTITION_SUFFIX, StoreSpec, Topology
from streamrt.serde import IntSerde, Serde, SerdeLike, serde_for
from streamrt.state.store import IN_MEMORY, ROCKS_DB

__all__ = (
    "ChangeSerde",
    "KGroupedTable",
    "Materialized",
    "MaterializedLike",
    "ValueGetter",
    "as_change",
    "store_getter",
)

KTable = Any  # runtime.dsl.KTable: not imported, as runtime.dsl imports this module


@dataclass(frozen=True, slots=True)
class Materialized:
    """Where a table is stored: a queryable store name, optional serdes and store kind."""

    name: str
    key_serde: SerdeLike = None
    value_serde: SerdeLike = None
    in_memory: bool | None = None

    @classmethod
    def as_(cls, name: str, **kwargs: Any) -> Materialized:
        """``Materialized.as_("store")``, as Kafka's ``Materialized.as(name)``."""
        return cls(name, **kwargs)


MaterializedLike = str | Materialized | None


@dataclass(frozen=True, slots=True)
class ValueGetter:
    """How a processor reads a table by key: the stores it needs in its task, and a factory
    of ``get(key)`` given the processor's context."""

    stores: tuple[str, ...]
    make: Callable[[ProcessorContext], Callable[[Any], Any]]


def store_getter(store: str) -> ValueGetter:
    return ValueGetter((store,), lambda ctx: ctx.get_store(store).get)


def as_change(value: Any) -> Change:
    """A parent that forwards plain values (an older table node) means ``Change(value)``."""
    return value if isinstance(value, Change) else Change(value, None)


_LEN = struct.Struct(">i")


class ChangeSerde:
    """A Change on a repartition topic: a flag (1 new, 2 old, 3 both), then the values."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner

    def serialize(self, value: Change | None) -> bytes | None:
        if value is None:
            return None
        new = None if value.new is None else self.inner.serialize(value.new)
        old = None if value.old is None else self.inner.serialize(value.old)
        flag = (1 if new is not None else 0) | (2 if old is not None else 0)
        out = bytes([flag])
        if new is not None:
            out += _LEN.pack(len(new)) + new
        if old is not None:
            out += old
        return out

    def deserialize(self, data: bytes | None) -> Change | None:
        if data is None:
            return None
        flag, pos = data[0], 1
        new = old = None
        if flag & 1:
            (n,) = _LEN.unpack_from(data, pos)
            new = self.inner.deserialize(data[pos + 4 : pos + 4 + n])
            pos += 4 + n
        if flag & 2:
            old = self.inner.deserialize(data[pos:])
        return Change(new, old)


def materialize(
    topology: Topology,
    materialized: MaterializedLike,
    key_serde: Serde[Any],
    value_serde: Serde[Any],
) -> tuple[str | None, Serde[Any], Serde[Any]]:
    """Register the store a ``materialized`` argument asks for; (None, serdes) if none."""
    if materialized is None:
        return None, key_serde, value_serde
    spec = Materialized(materialized) if isinstance(materialized, str) else materialized
    kser = serde_for(spec.key_serde) if spec.key_serde is not None else key_serde
    vser = serde_for(spec.value_serde) if spec.value_serde is not None else value_serde
    kind = None if spec.in_memory is None else (IN_MEMORY if spec.in_memory else ROCKS_DB)
    topology.add_store(StoreSpec(spec.name, kser, vser, kind))
    return spec.name, kser, vser


# -- processors ------------------------------------------------------------------------------


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
    """A failed predicate forwards a tombstone; nothing if both results are null."""

    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool, store: str | None):
        super().__init__(store)
        self.predicate = predicate
        self.negate = negate

    def keep(self, key: Any, value: Any) -> Any:
        if value is None or bool(self.predicate(key, value)) == self.negate:
            return None
        return value

    def process(self, key: Any, value: Any) -> None:
        change = as_change(value)
        new, old = self.keep(key, change.new), self.keep(key, change.old)
        if new is None and old is None:
            return
        self.emit(key, Change(new, old))


class TableMapValuesProcessor(_StoringProcessor):
    def __init__(self, fn: Callable[[Any], Any], store: str | None) -> None:
        super().__init__(store)
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        change = as_change(value)
        new = None if change.new is None else self.fn(change.new)
        old = None if change.old is None else self.fn(change.old)
        self.emit(key, Change(new, old))


class TableMaterializeProcessor(_StoringProcessor):
    """Stores a Change stream's new values (a join result given a store name)."""

    def process(self, key: Any, value: Any) -> None:
        self.emit(key, as_change(value))


class TableRepartitionMapProcessor(Processor):
    """``KTable.group_by``: the old value leaves its old group, the new joins its new one."""

    def __init__(self, selector: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.selector = selector

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            raise StreamrtError("KTable.group_by: a table record has a null key")
        change = as_change(value)
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


class TableAggregateProcessor(Processor):
    """subtractor(old) if there is an aggregate, then adder(new); stores and forwards."""

    def __init__(
        self,
        store: str,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
    ) -> None:
        self.store_name = store
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        change = as_change(value)
        store = self.context.get_store(self.store_name)
        old_agg = store.get(key)
        agg = old_agg
        if change.old is not None and agg is not None:
            agg = self.subtractor(key, change.old, agg)
        if change.new is not None:
            agg = self.adder(key, change.new, self.initializer() if agg is None else agg)
        if agg is None:
            store.delete(key)
        else:
            store.put(key, agg)
        self.context.forward(key, Change(agg, old_agg))


# -- DSL -------------------------------------------------------------------------------------


def _table(
    parent: KTable,
    prefix: str,
    supplier: Callable[[], Processor],
    store: str | None,
    key_serde: Serde[Any],
    value_serde: Serde[Any],
    getter: ValueGetter,
) -> KTable:
    topology = parent.topology
    node = topology.add_processor(
        topology.new_name(prefix),
        supplier,
        parent.node,
        stores=(store,) if store else (),
        accepts_changes=True,
    )
    return type(parent)(
        topology,
        node,
        store,  # None: not materialized, read through the getter
        key_serde,
        value_serde,
        getter=store_getter(store) if store else getter,
    )


def filter_table(
    table: KTable,
    predicate: Callable[[Any, Any], bool],
    negate: bool,
    materialized: MaterializedLike,
) -> KTable:
    store, kser, vser = materialize(
        table.topology, materialized, table.key_serde, table.value_serde
    )
    parent = table.getter

    def make(ctx: ProcessorContext) -> Callable[[Any], Any]:
        get = parent.make(ctx)

        def filtered(key: Any) -> Any:
            value = get(key)
            ok = value is not None and bool(predicate(key, value)) != negate
            return value if ok else None

        return filtered

    return _table(
        table,
        "KTABLE-FILTER",
        lambda: TableFilterProcessor(predicate, negate, store),
        store,
        kser,
        vser,
        ValueGetter(parent.stores, make),
    )


def map_values_table(
    table: KTable,
    fn: Callable[[Any], Any],
    value_serde: SerdeLike,
    materialized: MaterializedLike,
) -> KTable:
    vser0 = serde_for(value_serde) if value_serde is not None else table.value_serde
    store, kser, vser = materialize(table.topology, materialized, table.key_serde, vser0)
    parent = table.getter

    def make(ctx: ProcessorContext) -> Callable[[Any], Any]:
        get = parent.make(ctx)
        return lambda key: None if (v := get(key)) is None else fn(v)

    return _table(
        table,
        "KTABLE-MAPVALUES",
        lambda: TableMapValuesProcessor(fn, store),
        store,
        kser,
        vser,
        ValueGetter(parent.stores, make),
    )


class KGroupedTable:
    """A table re-keyed by ``KTable.group_by``: aggregations see each update as an
    addition to the new group and a subtraction from the old one."""

    def __init__(
        self,
        topology: Topology,
        node: str,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        table_type: type[KTable],
    ):
        self.table_type = table_type  # the KTable class (runtime.dsl imports this module)
        self.topology = topology
        self.node = node
        self.key_serde = key_serde
        self.value_serde = value_serde

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        *,
        materialized: MaterializedLike,
        value_serde: SerdeLike = "json",
    ) -> KTable:
        """``adder(key, value, agg)`` / ``subtractor(key, value, agg)``; stored in
        ``materialized`` (required: the aggregate needs a store)."""
        if materialized is None:
            raise ConfigError("KGroupedTable.aggregate needs a materialized store name")
        store, kser, vser = materialize(
            self.topology, materialized, self.key_serde, serde_for(value_serde)
        )
        assert store is not None
        node = self.topology.add_processor(
            self.topology.new_name("KTABLE-AGGREGATE"),
            lambda: TableAggregateProcessor(store, initializer, adder, subtractor),
            self.node,
            stores=(store,),
            accepts_changes=True,
        )
        return self.table_type(self.topology, node, store, kser, vser)

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        *,
        materialized: MaterializedLike,
    ) -> KTable:
        """``adder(agg, value)``, ``subtractor(agg, value)``; the first value is the aggregate."""
        first = object()

        def add(_k: Any, v: Any, agg: Any) -> Any:
            return v if agg is first else adder(agg, v)

        return self.aggregate(
            lambda: first,
            add,
            lambda _k, v, agg: subtractor(agg, v),
            materialized=materialized,
            value_serde=self.value_serde,
        )

    def count(self, *, materialized: MaterializedLike) -> KTable:
        return self.aggregate(
            lambda: 0,
            lambda _k, _v, agg: agg + 1,
            lambda _k, _v, agg: agg - 1,
            materialized=materialized,
            value_serde=IntSerde(),
        )


def group_table(
    table: KTable,
    selector: Callable[[Any, Any], tuple[Any, Any]],
    name: str | None,
    key_serde: SerdeLike,
    value_serde: SerdeLike,
) -> KGroupedTable:
    """Map each update to (new key, new value) and repartition the Changes by the new key."""
    topology = table.topology
    kser = serde_for(key_serde) if key_serde is not None else table.key_serde
    vser = serde_for(value_serde) if value_serde is not None else table.value_serde
    mapper = topology.add_processor(
        topology.new_name("KTABLE-SELECT"),
        lambda: TableRepartitionMapProcessor(selector),
        table.node,
        accepts_changes=True,
    )
    base = (name or topology.new_name("KTABLE-AGGREGATE-STATE-STORE")) + REPARTITION_SUFFIX
    changes = ChangeSerde(vser)
    topology.add_sink(
        f"{base}-sink", base, kser, changes, mapper, internal=True, accepts_changes=True
    )
    source = topology.add_source(f"{base}-source", base, kser, changes, internal=True)
    return KGroupedTable(topology, source, kser, vser, type(table))
