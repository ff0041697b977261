"""The DSL's tables: :class:`KTable` and :class:`KGroupedTable` (``KTable.group_by``).

A KTable wraps a :class:`TableNode`; its operations are added by :mod:`.table_nodes`,
:mod:`.join_nodes` and :mod:`.fk_join_nodes`. ``to_stream`` is the one way back from tables to
streams, so this module refers to :mod:`.stream` by module (``stream`` imports this one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.dsl import stream as stream_api
from streamrt.runtime.dsl.aggregate_nodes import suppress_table
from streamrt.runtime.dsl.fk_join_nodes import foreign_key_join
from streamrt.runtime.dsl.join_nodes import table_join
from streamrt.runtime.dsl.table_nodes import (
    aggregate_table,
    filter_table,
    group_table,
    map_values_table,
)
from streamrt.runtime.graph.materialized import MaterializedLike
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.processors.aggregate import Aggregation, counting, reducing
from streamrt.runtime.processors.join_windows import Joiner, JoinKind
from streamrt.runtime.processors.stateless import PassThroughProcessor
from streamrt.runtime.processors.suppress import Suppressed
from streamrt.serde import IntSerde, SerdeLike, serde_for

__all__ = ("KGroupedTable", "KTable")

Predicate = Callable[[Any, Any], bool]


class KTable:
    """A changelog stream materialised in a named store (or read through its parent's)."""

    def __init__(self, node: TableNode) -> None:
        self.node = node

    @property
    def topology(self) -> Topology:
        return self.node.topology

    @property
    def store(self) -> str | None:
        """The queryable store; None for a table read through its parent's store."""
        return self.node.store

    def suppress(self, suppressed: Suppressed) -> KTable:
        """Hold updates back: ``Suppressed.until_window_closes(...)`` (emit-final, windowed
        tables only) or ``Suppressed.until_time_limit(ms, ...)``; see processors.suppress."""
        return KTable(suppress_table(self.node, suppressed))

    def filter(self, predicate: Predicate, *, materialized: MaterializedLike = None) -> KTable:
        """Keep rows matching ``predicate``; an update that fails it forwards a tombstone."""
        return KTable(filter_table(self.node, predicate, False, materialized))

    def filter_not(self, predicate: Predicate, *, materialized: MaterializedLike = None) -> KTable:
        return KTable(filter_table(self.node, predicate, True, materialized))

    def map_values(
        self,
        fn: Callable[[Any], Any],
        *,
        value_serde: SerdeLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        return KTable(map_values_table(self.node, fn, value_serde, materialized))

    def group_by(
        self,
        selector: Callable[[Any, Any], tuple[Any, Any]],
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KGroupedTable:
        """Re-key rows by ``selector(key, value) -> (new_key, new_value)`` for an aggregation
        with adder and subtractor (always through a repartition topic)."""
        return KGroupedTable(group_table(self.node, selector, name, key_serde, value_serde))

    def join(
        self,
        other: KTable,
        joiner: Joiner,
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        materialized: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        """Inner table-table join on the key, or on ``foreign_key(value)`` (a foreign-key
        join: ``other`` is keyed by what ``foreign_key`` returns)."""
        return self._join(other, joiner, "inner", foreign_key, materialized, value_serde)

    def left_join(
        self,
        other: KTable,
        joiner: Joiner,
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        materialized: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        return self._join(other, joiner, "left", foreign_key, materialized, value_serde)

    def outer_join(
        self,
        other: KTable,
        joiner: Joiner,
        *,
        materialized: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        return self._join(other, joiner, "outer", None, materialized, value_serde)

    def _join(
        self,
        other: object,
        joiner: Joiner,
        kind: JoinKind,
        foreign_key: Callable[[Any], Any] | None,
        materialized: MaterializedLike,
        value_serde: SerdeLike,
    ) -> KTable:
        if not isinstance(other, KTable):
            raise ConfigError(f"cannot join a KTable with {type(other).__name__}")
        vser = None if value_serde is None else serde_for(value_serde)
        if foreign_key is not None:
            left = kind == "left"
            return KTable(
                foreign_key_join(
                    self.node, other.node, foreign_key, joiner, left, materialized, vser
                )
            )
        return KTable(table_join(self.node, other.node, joiner, kind, materialized, vser))

    def to_stream(self) -> stream_api.KStream:
        topology = self.topology
        name = topology.add_processor(
            topology.new_name("KTABLE-TOSTREAM"), PassThroughProcessor, self.node.name
        )
        node = StreamNode(topology, name, self.node.key_serde, self.node.value_serde)
        return stream_api.KStream(node)


class KGroupedTable:
    """A table re-keyed by ``KTable.group_by``: aggregations see each update as an
    addition to the new group and a subtraction from the old one."""

    def __init__(self, grouped: StreamNode) -> None:
        self.grouped = grouped

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
        aggregation = Aggregation(initializer, adder, subtractor)
        return KTable(aggregate_table(self.grouped, aggregation, materialized, value_serde))

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        *,
        materialized: MaterializedLike,
    ) -> KTable:
        """``adder(agg, value)``, ``subtractor(agg, value)``; the first value is the aggregate."""
        aggregation = reducing(adder, subtractor)
        value_serde = self.grouped.value_serde
        return KTable(aggregate_table(self.grouped, aggregation, materialized, value_serde))

    def count(self, *, materialized: MaterializedLike) -> KTable:
        return KTable(aggregate_table(self.grouped, counting(), materialized, IntSerde()))
