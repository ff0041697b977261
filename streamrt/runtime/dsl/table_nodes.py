"""The graph nodes of KTable operations: source, filter, map_values, transform_values,
group_by, aggregate.

Each function adds its processors to the topology and returns the handle of the result
(:class:`TableNode`, or for ``group_by`` the repartitioned :class:`StreamNode` of Changes); the
API in :mod:`.streams` wraps it. A table given no ``materialized`` name has no store and is read
through a value getter recomputed from its parent's store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.graph.materialized import MaterializedLike, materialize, store_kind
from streamrt.runtime.graph.nodes import StreamNode, TableNode, ValueGetter, store_getter
from streamrt.runtime.graph.serdes import ChangeSerde
from streamrt.runtime.graph.topology import REPARTITION_SUFFIX, Topology
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors.aggregate import Aggregation, TableAggregateProcessor
from streamrt.runtime.processors.tables import (
    TableFilterProcessor,
    TableMapValuesProcessor,
    TableRepartitionMapProcessor,
    TableSourceProcessor,
    filter_getter,
    map_values_getter,
)
from streamrt.runtime.processors.transform_values import (
    TableTransformValuesProcessor,
    TransformerSupplier,
    transform_values_getter,
)
from streamrt.runtime.stores import StoreSpec
from streamrt.serde import Serde, SerdeLike, serde_for

__all__ = (
    "aggregate_table",
    "filter_table",
    "group_table",
    "map_values_table",
    "table_source",
    "transform_values_table",
)


def table_source(
    topology: Topology,
    topic: str,
    store: str,
    serdes: tuple[Serde[Any], Serde[Any]],
    in_memory: bool | None,
    caching: bool,
    versioned_history_ms: int | None = None,
) -> TableNode:
    """A table materialised from ``topic`` into ``store``; tombstones delete. A versioned
    store (``versioned_history_ms``) keeps each update as a version and is never cached."""
    kser, vser = serdes
    source = topology.add_source(topology.new_name("KTABLE-SOURCE"), topic, kser, vser)
    kind = store_kind(in_memory)
    if versioned_history_ms is None:
        spec = StoreSpec(store, kser, vser, kind, caching, timestamped=True)
    else:
        spec = StoreSpec(store, kser, vser, kind, False, versioned_history_ms=versioned_history_ms)
    topology.add_store(spec)
    node = topology.add_processor(
        topology.new_name("KTABLE-MATERIALIZE"),
        lambda: TableSourceProcessor(store),
        source,
        stores=(store,),
    )
    return TableNode.stored(topology, node, store, kser, vser)


def _table(
    parent: TableNode,
    name: str,
    supplier: Callable[[], Processor],
    stored: tuple[str | None, Serde[Any], Serde[Any]],
    getter: ValueGetter,
    more_stores: tuple[str, ...] = (),
) -> TableNode:
    """A table node ``name`` after ``parent``: its own store if materialized, else read via
    ``getter`` (and a request for old values passes on to ``parent``, as Kafka's); its
    processor may also use ``more_stores``."""
    store, kser, vser = stored
    topology = parent.topology
    if store is None:
        topology.old_value_parents[name] = (parent.name,)
    node = topology.add_processor(
        name,
        supplier,
        parent.name,
        stores=((store,) if store else ()) + more_stores,
        accepts_changes=True,
    )
    return TableNode(topology, node, store, kser, vser, store_getter(store) if store else getter)


def filter_table(
    table: TableNode,
    predicate: Callable[[Any, Any], bool],
    negate: bool,
    materialized: MaterializedLike,
    name: str | None = None,
) -> TableNode:
    topology = table.topology
    stored = materialize(topology, materialized, table.key_serde, table.value_serde)
    store = stored[0]
    name = name or topology.new_name("KTABLE-FILTER")
    return _table(
        table,
        name,
        lambda: TableFilterProcessor(predicate, negate, store, topology.sends_old_values(name)),
        stored,
        filter_getter(table.getter, predicate, negate),
    )


def map_values_table(
    table: TableNode,
    fn: Callable[[Any, Any], Any],
    value_serde: SerdeLike,
    materialized: MaterializedLike,
    name: str | None = None,
) -> TableNode:
    vser = serde_for(value_serde) if value_serde is not None else table.value_serde
    stored = materialize(table.topology, materialized, table.key_serde, vser)
    store = stored[0]
    return _table(
        table,
        name or table.topology.new_name("KTABLE-MAPVALUES"),
        lambda: TableMapValuesProcessor(fn, store),
        stored,
        map_values_getter(table.getter, fn),
    )


def transform_values_table(
    table: TableNode,
    supplier: TransformerSupplier,
    stores: tuple[str, ...],
    value_serde: SerdeLike,
    materialized: MaterializedLike,
    name: str | None = None,
) -> TableNode:
    """``KTable.transform_values`` (see :mod:`streamrt.runtime.processors.transform_values`);
    the transformer may use ``stores`` (registered with ``add_state_store``)."""
    topology = table.topology
    vser = serde_for(value_serde) if value_serde is not None else table.value_serde
    stored = materialize(topology, materialized, table.key_serde, vser)
    store = stored[0]
    name = name or topology.new_name("KTABLE-TRANSFORMVALUES")
    return _table(
        table,
        name,
        lambda: TableTransformValuesProcessor(supplier, store, topology.sends_old_values(name)),
        stored,
        transform_values_getter(table.getter, supplier),
        stores,
    )


def group_table(
    table: TableNode,
    selector: Callable[[Any, Any], tuple[Any, Any]],
    name: str | None,
    key_serde: SerdeLike,
    value_serde: SerdeLike,
) -> StreamNode:
    """Map each update to (new key, new value) and repartition the Changes by the new key;
    the result's value serde is the grouped value's (the topic holds Changes of it)."""
    topology = table.topology
    kser = serde_for(key_serde) if key_serde is not None else table.key_serde
    vser = serde_for(value_serde) if value_serde is not None else table.value_serde
    topology.request_old_values(table.name)
    mapper = topology.add_processor(
        topology.new_name("KTABLE-SELECT"),
        lambda: TableRepartitionMapProcessor(selector),
        table.name,
        accepts_changes=True,
    )
    base = (name or topology.new_name("KTABLE-AGGREGATE-STATE-STORE")) + REPARTITION_SUFFIX
    changes = ChangeSerde(vser)
    topology.add_sink(
        f"{base}-sink", base, kser, changes, mapper, internal=True, accepts_changes=True
    )
    source = topology.add_source(f"{base}-source", base, kser, changes, internal=True)
    return StreamNode(topology, source, kser, vser)


def aggregate_table(
    grouped: StreamNode,
    aggregation: Aggregation,
    materialized: MaterializedLike,
    value_serde: SerdeLike,
    name: str | None = None,
) -> TableNode:
    """The grouped table's aggregate (adder and subtractor) in the ``materialized`` store;
    ``name`` names the processor."""
    if materialized is None:
        raise ConfigError("KGroupedTable.aggregate needs a materialized store name")
    topology = grouped.topology
    vser = serde_for(value_serde)
    store, kser, vser = materialize(topology, materialized, grouped.key_serde, vser)
    assert store is not None and aggregation.subtractor is not None
    subtractor = aggregation.subtractor
    node = topology.add_processor(
        name or topology.new_name("KTABLE-AGGREGATE"),
        lambda: TableAggregateProcessor(
            store, aggregation.initializer, aggregation.adder, subtractor
        ),
        grouped.name,
        stores=(store,),
        accepts_changes=True,
    )
    return TableNode.stored(topology, node, store, kser, vser)
