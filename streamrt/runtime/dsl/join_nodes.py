"""The graph nodes of joins: KStream-KTable, KStream-KStream (windowed), KTable-KTable, and
KStream-GlobalKTable. The foreign-key join is in :mod:`.fk_join_nodes`.

Every join but the global one needs co-partitioned inputs: a stream side whose key changed is
repartitioned first, and the sources of both sides are recorded as a co-partition group,
checked at start-up.
"""

from __future__ import annotations

from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.graph.global_tables import GlobalTableSpec
from streamrt.runtime.graph.materialized import MaterializedLike, materialize, store_kind
from streamrt.runtime.graph.nodes import StreamNode, TableNode, ValueGetter
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.processors.join_windows import (
    Joiner,
    JoinKind,
    JoinWindows,
    ValueJoinerWithKey,
    key_joiner,
)
from streamrt.runtime.processors.stateless import PassThroughProcessor
from streamrt.runtime.processors.stream_stream_join import (
    LEFT,
    RIGHT,
    StreamJoinSpec,
    StreamStreamJoinSide,
    Trackers,
)
from streamrt.runtime.processors.stream_table_join import (
    GraceSpec,
    StreamGlobalJoinProcessor,
    StreamTableJoinProcessor,
)
from streamrt.runtime.processors.table_join import TableJoinSide, joined_getter
from streamrt.runtime.processors.tables import TableMaterializeProcessor
from streamrt.runtime.stores import StoreSpec
from streamrt.serde import BytesSerde, Serde

__all__ = (
    "StreamJoiner",
    "join_result",
    "stream_global_join",
    "stream_stream_join",
    "stream_table_join",
    "table_join",
)

KeyMapper = Joiner  # (key, value) -> the global table's key


StreamJoiner = Joiner | ValueJoinerWithKey


def stream_table_join(
    stream: StreamNode,
    table: TableNode,
    joiner: StreamJoiner,
    left: bool,
    name: str | None,
    grace: int | None = None,
) -> StreamNode:
    """A table is never repartitioned automatically, the stream is (if its key changed). A
    versioned table is read as of each stream record's time; ``grace`` (versioned tables
    only, as Kafka) buffers stream records that long first."""
    with_key = key_joiner(joiner)
    stream = stream.repartitioned_if_needed(name and f"{name}-left")
    topology = stream.topology
    getter = table.getter
    base = name or topology.new_name("KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN")
    spec = _versioned_join(stream, table, base, grace)
    stores = getter.stores if spec is None else (spec.table_store, spec.buffer_store)
    node = topology.add_processor(
        base,
        lambda: StreamTableJoinProcessor(getter, with_key, left, spec),
        stream.name,
        stores=tuple(s for s in stores if s is not None),
    )
    topology.add_copartition_group(stream.name, table.name)
    return StreamNode(topology, node, stream.key_serde, stream.value_serde)


def _versioned_join(
    stream: StreamNode, table: TableNode, base: str, grace: int | None
) -> GraceSpec | None:
    """The as-of join of a versioned table, with its buffer store if ``grace`` > 0."""
    topology = stream.topology
    stored = None if table.store is None else topology.stores.get(table.store)
    if stored is None or stored.versioned_history_ms is None:
        if grace is not None:
            raise ConfigError(
                "a stream-table join with a grace period needs a versioned table "
                "(materialized with versioned_history_ms)"
            )
        return None
    if grace is not None and grace < 0:
        raise ConfigError(f"the grace period of a stream-table join must be >= 0, got {grace}")
    if grace is not None and grace > stored.versioned_history_ms:
        raise ConfigError(
            f"the grace period ({grace} ms) must not exceed the table's history retention "
            f"({stored.versioned_history_ms} ms)"
        )
    buffer = None
    if grace:
        buffer = f"{base}-Buffer"
        topology.add_store(StoreSpec(buffer, BytesSerde(), BytesSerde(), caching=False))
    return GraceSpec(stored.name, grace or 0, buffer, (stream.key_serde, stream.value_serde))


def stream_global_join(
    stream: StreamNode,
    spec: GlobalTableSpec,
    key_mapper: KeyMapper,
    joiner: StreamJoiner,
    left: bool,
    name: str | None = None,
) -> StreamNode:
    """Never repartitions: every instance holds the whole table."""
    topology = stream.topology
    with_key = key_joiner(joiner)
    node = topology.add_processor(
        name or topology.new_name("KSTREAM-LEFTJOIN-GLOBAL" if left else "KSTREAM-JOIN-GLOBAL"),
        lambda: StreamGlobalJoinProcessor(spec, key_mapper, with_key, left),
        stream.name,
    )
    return StreamNode(topology, node, stream.key_serde, stream.value_serde, stream.key_changed)


def stream_stream_join(
    left: StreamNode,
    right: StreamNode,
    joiner: StreamJoiner,
    windows: JoinWindows,
    kind: JoinKind,
    name: str | None,
    in_memory: bool | None,
) -> StreamNode:
    """Both sides buffered in window stores (and a shared one for unmatched left/outer
    records); each side's processor joins, a pass-through merges their results."""
    if not isinstance(windows, JoinWindows):
        raise ConfigError("a KStream-KStream join needs windows=JoinWindows...")
    topology = left.topology
    base = name or topology.new_name(f"KSTREAM-{kind.upper()}JOIN")
    left = left.repartitioned_if_needed(f"{base}-left")
    right = right.repartitioned_if_needed(f"{base}-right")
    raw = BytesSerde()
    stores = [f"{base}-this-join-store", f"{base}-other-join-store"]
    if kind != "inner":
        stores.append(f"{base}-{kind}-shared-join-store")
    for store in stores:
        topology.add_store(StoreSpec(store, raw, raw, store_kind(in_memory)))
    spec = StreamJoinSpec(
        windows,
        key_joiner(joiner),
        kind,
        left.key_serde,
        left.value_serde,
        right.value_serde,
        stores[0],
        stores[1],
        stores[2] if kind != "inner" else None,
        Trackers(),
    )
    this_node = topology.add_processor(
        f"{base}-this", lambda: StreamStreamJoinSide(spec, LEFT), left.name, stores=tuple(stores)
    )
    other_node = topology.add_processor(
        f"{base}-other", lambda: StreamStreamJoinSide(spec, RIGHT), right.name, stores=tuple(stores)
    )
    merged = topology.add_processor(f"{base}-merge", PassThroughProcessor, this_node, other_node)
    topology.add_copartition_group(left.name, right.name)
    return StreamNode(topology, merged, left.key_serde, left.value_serde)


def table_join(
    left: TableNode,
    right: TableNode,
    joiner: Joiner,
    kind: JoinKind,
    materialized: MaterializedLike,
    value_serde: Serde[Any] | None,
    name: str | None = None,
) -> TableNode:
    """Each side's updates joined with the other side's current value, merged; stored if
    ``materialized``, else read by joining both sides' getters; ``name`` names the nodes."""
    topology = left.topology
    base = name or topology.new_name(f"KTABLE-{kind.upper()}JOIN")
    lg, rg = left.getter, right.getter
    getter = joined_getter(lg, rg, joiner, kind)
    this = topology.add_processor(
        f"{base}-this",
        lambda: TableJoinSide(rg, joiner, kind, True),
        left.name,
        stores=getter.stores,
        accepts_changes=True,
    )
    other = topology.add_processor(
        f"{base}-other",
        lambda: TableJoinSide(lg, joiner, kind, False),
        right.name,
        stores=getter.stores,
        accepts_changes=True,
    )
    merged = topology.add_processor(
        f"{base}-merge", PassThroughProcessor, this, other, accepts_changes=True
    )
    topology.add_copartition_group(left.name, right.name)
    # Kafka: a left join makes the left table send old values, an outer join both; a request
    # for the result's old values reaches both tables
    if kind != "inner":
        topology.request_old_values(left.name)
    if kind == "outer":
        topology.request_old_values(right.name)
    for node in (merged, f"{base}-materialize"):
        topology.old_value_parents[node] = (left.name, right.name)
    stored = materialize(topology, materialized, left.key_serde, value_serde or left.value_serde)
    return join_result(topology, merged, f"{base}-materialize", stored, getter)


def join_result(
    topology: Topology,
    parent: str,
    name: str,
    stored: tuple[str | None, Serde[Any], Serde[Any]],
    getter: ValueGetter,
) -> TableNode:
    """A join's result table: stored by a ``name`` processor after ``parent`` if ``stored``
    names a store (see ``materialize``), else ``parent`` read through ``getter``."""
    store, kser, vser = stored
    if store is None:
        return TableNode(topology, parent, None, kser, vser, getter)
    node = topology.add_processor(
        name,
        lambda: TableMaterializeProcessor(store, topology.sends_old_values(name)),
        parent,
        stores=(store,),
        accepts_changes=True,
    )
    return TableNode.stored(topology, node, store, kser, vser)
