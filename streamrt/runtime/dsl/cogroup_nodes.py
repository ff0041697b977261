"""The graph nodes of ``cogroup`` and ``KStream.to_table``.

``cogroup`` (KIP-150): several grouped streams fold into one aggregate per key, each with its
own aggregator, through one shared store: one aggregate processor per input stream, their
updates merged into one table, as Kafka's ``CogroupedStreamAggregateBuilder``. ``to_table``
turns a stream into a table source (null keys dropped, a null value deletes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from streamrt.runtime.dsl.aggregate_nodes import (
    WindowStoreOptions,
    add_window_store,
    window_processor,
    windowed_key_serde,
)
from streamrt.runtime.graph.materialized import Materialized, MaterializedLike, materialize
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors.aggregate import (
    AggregateProcessor,
    Aggregation,
    Aggregator,
    Initializer,
    Merger,
)
from streamrt.runtime.processors.stateless import PassThroughProcessor
from streamrt.runtime.processors.tables import TableSourceProcessor
from streamrt.runtime.windows import Windows
from streamrt.serde import Serde

__all__ = ("cogroup_aggregate", "stream_to_table", "windowed_cogroup_aggregate")


def cogroup_aggregate(
    streams: Sequence[tuple[StreamNode, Aggregator]],
    initializer: Initializer,
    materialized: MaterializedLike,
    value_serde: Serde[Any],
    name: str | None = None,
) -> TableNode:
    """One aggregate per key over every ``(stream, aggregator)``, in one store; ``name``
    names the processors as Kafka's ``Named`` does (``<name>-cogroup-agg-<i>``,
    ``<name>-cogroup-merge``)."""
    first = streams[0][0]
    topology = first.topology
    if materialized is None:
        materialized = topology.new_name("COGROUPKSTREAM-AGGREGATE-STATE-STORE")
    store, kser, vser = materialize(topology, materialized, first.key_serde, value_serde)
    assert store is not None
    parts = [
        topology.add_processor(
            f"{name}-cogroup-agg-{i}" if name else topology.new_name("COGROUPKSTREAM-AGGREGATE"),
            _aggregate_supplier(store, initializer, aggregator),
            stream.name,
            stores=(store,),
        )
        for i, (stream, aggregator) in enumerate(streams)
    ]
    merged = topology.add_processor(
        f"{name}-cogroup-merge" if name else topology.new_name("COGROUPKSTREAM-MERGE"),
        PassThroughProcessor,
        *parts,
        accepts_changes=True,
    )
    topology.add_copartition_group(*(stream.name for stream, _ in streams))
    return TableNode.stored(topology, merged, store, kser, vser)


def windowed_cogroup_aggregate(
    streams: Sequence[tuple[StreamNode, Aggregator]],
    windows: Windows,
    initializer: Initializer,
    merger: Merger | None,
    materialized: Materialized | None,
    value_serde: Serde[Any],
) -> TableNode:
    """One aggregate per key and window (time, sliding or session) over every
    ``(stream, aggregator)``, in one window/session store: one windowed aggregate processor
    per input, merged, as Kafka's ``CogroupedStreamAggregateBuilder.build`` with windows."""
    first = streams[0][0]
    topology = first.topology
    m = materialized or Materialized(topology.new_name("COGROUPKSTREAM-AGGREGATE-STATE-STORE"))
    store, options = m.name, WindowStoreOptions(in_memory=m.in_memory)
    stores = add_window_store(topology, windows, store, first.key_serde, value_serde, options)
    merged: list[str] = []  # the merge node's name: asked for old values by a downstream
    parts = []
    for stream, aggregator in streams:
        aggregation = Aggregation(initializer, aggregator, merger=merger)
        prefix, supplier = window_processor(
            windows,
            store,
            aggregation,
            False,
            lambda: topology.sends_old_values(merged[0]),
            sharing=True,
        )
        parts.append(
            topology.add_processor(topology.new_name(prefix), supplier, stream.name, stores=stores)
        )
    merged.append(
        topology.add_processor(
            topology.new_name("COGROUPKSTREAM-MERGE"),
            PassThroughProcessor,
            *parts,
            accepts_changes=True,
        )
    )
    topology.add_copartition_group(*(stream.name for stream, _ in streams))
    return TableNode.stored(
        topology,
        merged[0],
        store,
        windowed_key_serde(windows, first.key_serde),
        value_serde,
        window_close_delay_ms=windows.close_delay_ms,
    )


def _aggregate_supplier(
    store: str, initializer: Initializer, aggregator: Aggregator
) -> Callable[[], Processor]:
    return lambda: AggregateProcessor(store, initializer, aggregator)


def stream_to_table(
    stream: StreamNode, materialized: MaterializedLike, name: str | None = None
) -> TableNode:
    """The stream as a table (repartitioned first if its key changed), stored in
    ``materialized`` or an internal store, as Kafka's ``KStream.toTable``."""
    topology = stream.topology
    stream = stream.repartitioned_if_needed(topology.new_name("KSTREAM-TOTABLE"))
    if materialized is None:
        materialized = topology.new_name("KSTREAM-TOTABLE-STATE-STORE")
    store, kser, vser = materialize(topology, materialized, stream.key_serde, stream.value_serde)
    assert store is not None
    node = topology.add_processor(
        name or topology.new_name("KSTREAM-TOTABLE"),
        lambda: TableSourceProcessor(store),
        stream.name,
        stores=(store,),
    )
    return TableNode.stored(topology, node, store, kser, vser)
