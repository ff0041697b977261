"""The graph nodes of ``cogroup`` and ``KStream.to_table``.

``cogroup`` (KIP-150): several grouped streams fold into one aggregate per key, each with its
own aggregator, through one shared store: one aggregate processor per input stream, their
updates merged into one table, as Kafka's ``CogroupedStreamAggregateBuilder``. ``to_table``
turns a stream into a table source (null keys dropped, a null value deletes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from streamrt.runtime.graph.materialized import MaterializedLike, materialize
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors.aggregate import AggregateProcessor, Aggregator, Initializer
from streamrt.runtime.processors.stateless import PassThroughProcessor
from streamrt.runtime.processors.tables import TableSourceProcessor
from streamrt.serde import Serde

__all__ = ("cogroup_aggregate", "stream_to_table")


def cogroup_aggregate(
    streams: Sequence[tuple[StreamNode, Aggregator]],
    initializer: Initializer,
    materialized: MaterializedLike,
    value_serde: Serde[Any],
) -> TableNode:
    """One aggregate per key over every ``(stream, aggregator)``, in one store."""
    first = streams[0][0]
    topology = first.topology
    if materialized is None:
        materialized = topology.new_name("COGROUPKSTREAM-AGGREGATE-STATE-STORE")
    store, kser, vser = materialize(topology, materialized, first.key_serde, value_serde)
    assert store is not None
    parts = [
        topology.add_processor(
            topology.new_name("COGROUPKSTREAM-AGGREGATE"),
            _aggregate_supplier(store, initializer, aggregator),
            stream.name,
            stores=(store,),
        )
        for stream, aggregator in streams
    ]
    merged = topology.add_processor(
        topology.new_name("COGROUPKSTREAM-MERGE"),
        PassThroughProcessor,
        *parts,
        accepts_changes=True,
    )
    topology.add_copartition_group(*(stream.name for stream, _ in streams))
    return TableNode.stored(topology, merged, store, kser, vser)


def _aggregate_supplier(
    store: str, initializer: Initializer, aggregator: Aggregator
) -> Callable[[], Processor]:
    return lambda: AggregateProcessor(store, initializer, aggregator)


def stream_to_table(stream: StreamNode, materialized: MaterializedLike) -> TableNode:
    """The stream as a table (repartitioned first if its key changed), stored in
    ``materialized`` or an internal store, as Kafka's ``KStream.toTable``."""
    topology = stream.topology
    stream = stream.repartitioned_if_needed(topology.new_name("KSTREAM-TOTABLE"))
    if materialized is None:
        materialized = topology.new_name("KSTREAM-TOTABLE-STATE-STORE")
    store, kser, vser = materialize(topology, materialized, stream.key_serde, stream.value_serde)
    assert store is not None
    node = topology.add_processor(
        topology.new_name("KSTREAM-TOTABLE"),
        lambda: TableSourceProcessor(store),
        stream.name,
        stores=(store,),
    )
    return TableNode.stored(topology, node, store, kser, vser)
