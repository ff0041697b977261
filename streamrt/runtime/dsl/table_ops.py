"""The operations every KTable has that stay tables: filter, map_values, suppress and the
table-table joins (on the key or a foreign key) (:class:`TableOperations`).

Generic in the table type it returns, as :mod:`.stream_ops` is: :class:`~.streams.KTable`
subclasses it and wraps graph handles (``_wrap``); ``group_by`` and ``to_stream``, which lead
to other API classes, are in :mod:`.streams`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypedDict, TypeVar, Unpack

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.aggregate_nodes import suppress_table
from streamrt.runtime.dsl.fk_join_nodes import foreign_key_join
from streamrt.runtime.dsl.join_nodes import table_join
from streamrt.runtime.dsl.options import TableJoined, pick, removed_keywords
from streamrt.runtime.dsl.stream_ops import ValueMapperWithKey
from streamrt.runtime.dsl.table_nodes import (
    filter_table,
    map_values_table,
    transform_values_table,
)
from streamrt.runtime.graph.materialized import MaterializedLike
from streamrt.runtime.graph.nodes import TableNode
from streamrt.runtime.graph.topology import StreamPartitioner, Topology
from streamrt.runtime.processors.join_windows import Joiner, JoinKind, ValueJoinerWithKey
from streamrt.runtime.processors.suppress import Suppressed
from streamrt.runtime.processors.transform_values import TransformerSupplier
from streamrt.serde import SerdeLike, serde_for

__all__ = ("TableOperations",)

T = TypeVar("T", bound="TableOperations[Any]")
Predicate = Callable[[Any, Any], bool]


class TableJoinArgs(TypedDict, total=False):
    """The keyword options ``KTable.join`` and ``left_join`` share (each optional)."""

    foreign_key: Callable[[Any], Any] | ValueMapperWithKey | None
    store: MaterializedLike
    value_serde: SerdeLike
    name: str | None
    table_joined: TableJoined | None
    partitioner: StreamPartitioner | None
    other_partitioner: StreamPartitioner | None


class TableOperations(ABC, Generic[T]):
    """A table's operators that return a table (a changelog stream materialised in a named
    store, or read through its parent's)."""

    def __init__(self, node: TableNode) -> None:
        self.node = node

    @abstractmethod
    def _wrap(self, node: TableNode) -> T:
        """The API table over ``node``."""

    @property
    def topology(self) -> Topology:
        return self.node.topology

    @property
    def store(self) -> str | None:
        """The queryable store; None for a table read through its parent's store."""
        return self.node.store

    def suppress(self, suppressed: Suppressed) -> T:
        """Hold updates back: ``Suppressed.until_window_closes(...)`` (emit-final, windowed
        tables only) or ``Suppressed.until_time_limit(ms, ...)``; see processors.suppress."""
        return self._wrap(suppress_table(self.node, suppressed))

    def filter(
        self,
        predicate: Predicate,
        *,
        store: MaterializedLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> T:
        """Keep rows matching ``predicate``; an update that fails it forwards a tombstone.
        ``store`` (a name or a ``Materialized``) materializes the result, here and in the
        other table operators (None: read through the parent's store); ``name`` names the
        processor."""
        removed_keywords("KTable.filter", removed)
        return self._wrap(filter_table(self.node, predicate, False, store, name))

    def filter_not(
        self,
        predicate: Predicate,
        *,
        store: MaterializedLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> T:
        removed_keywords("KTable.filter_not", removed)
        return self._wrap(filter_table(self.node, predicate, True, store, name))

    def map_values(
        self,
        fn: Callable[[Any], Any] | ValueMapperWithKey,
        *,
        value_serde: SerdeLike = None,
        store: MaterializedLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> T:
        """``fn(value)``, or ``ValueMapperWithKey(fn)``: ``fn(key, value)`` (Kafka's
        ``ValueMapperWithKey``), of each new and old value; reads map the parent's value."""
        removed_keywords("KTable.map_values", removed)
        keyed = fn.fn if isinstance(fn, ValueMapperWithKey) else (lambda _k, v: fn(v))
        return self._wrap(map_values_table(self.node, keyed, value_serde, store, name))

    def transform_values(
        self,
        supplier: TransformerSupplier,
        *store_names: str,
        value_serde: SerdeLike = None,
        store: MaterializedLike = None,
        name: str | None = None,
    ) -> T:
        """Kafka's ``KTable.transformValues``: a ``ValueTransformerWithKey`` from
        ``supplier()`` per task, ``transform(key, value)`` of each update (a delete's None
        too; of old values when asked, and of the parent's value on reads by key unless
        ``store`` materializes the result); it may use the ``store_names`` registered with
        ``add_state_store``."""
        return self._wrap(
            transform_values_table(self.node, supplier, store_names, value_serde, store, name)
        )

    def join(self, other: T, joiner: Joiner, **options: Unpack[TableJoinArgs]) -> T:
        """Inner table-table join on the key, or on ``foreign_key(value)`` (a foreign-key
        join: ``other`` is keyed by what ``foreign_key`` returns; a
        ``ValueMapperWithKey(fn)`` gets ``fn(key, value)``, Kafka's ``BiFunction`` extractor
        of KIP-1104). A foreign-key join's ``partitioner`` / ``other_partitioner`` place its
        response / subscription records when this / the other table is not partitioned by
        key hash (``table_joined=TableJoined.with_(p, op)`` is the same)."""
        return self._join_with(other, joiner, "inner", options)

    def left_join(self, other: T, joiner: Joiner, **options: Unpack[TableJoinArgs]) -> T:
        return self._join_with(other, joiner, "left", options)

    def _join_with(self, other: T, joiner: Joiner, kind: JoinKind, options: TableJoinArgs) -> T:
        """One path for ``join``/``left_join``: their keyword options unpacked for ``_join``."""
        unknown = set(options) - set(TableJoinArgs.__annotations__)
        removed_keywords("KTable.join", {k: None for k in sorted(unknown)})
        foreign_key, materialized = options.get("foreign_key"), options.get("store")
        tj = options.get("table_joined") or TableJoined()
        partitioners = (
            pick(options.get("partitioner"), tj.partitioner),
            pick(options.get("other_partitioner"), tj.other_partitioner),
        )
        if foreign_key is None and partitioners != (None, None):
            raise ConfigError("partitioner= is for a foreign-key join (foreign_key=...)")
        return self._join(
            other,
            joiner,
            kind,
            foreign_key,
            materialized,
            options.get("value_serde"),
            pick(options.get("name"), tj.name),
            partitioners,
        )

    def outer_join(
        self,
        other: T,
        joiner: Joiner,
        *,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> T:
        removed_keywords("KTable.outer_join", removed)
        return self._join(other, joiner, "outer", None, store, value_serde, name)

    def _join(
        self,
        other: object,
        joiner: Joiner,
        kind: JoinKind,
        foreign_key: Callable[[Any], Any] | ValueMapperWithKey | None,
        materialized: MaterializedLike,
        value_serde: SerdeLike,
        name: str | None = None,
        partitioners: tuple[StreamPartitioner | None, StreamPartitioner | None] = (None, None),
    ) -> T:
        if not isinstance(other, TableOperations):
            raise ConfigError(f"cannot join a KTable with {type(other).__name__}")
        if isinstance(joiner, ValueJoinerWithKey):  # as Kafka: KTable joins take a ValueJoiner
            raise ConfigError("KTable joins take joiner(left, right), not a ValueJoinerWithKey")
        vser = None if value_serde is None else serde_for(value_serde)
        if foreign_key is not None:
            fk = foreign_key
            fk_of = fk.fn if isinstance(fk, ValueMapperWithKey) else (lambda _k, v: fk(v))
            left = kind == "left"
            return self._wrap(
                foreign_key_join(
                    self.node,
                    other.node,
                    fk_of,
                    joiner,
                    left,
                    materialized,
                    vser,
                    name,
                    partitioners,
                )
            )
        return self._wrap(table_join(self.node, other.node, joiner, kind, materialized, vser, name))
