"""The DSL's API classes: :class:`KStream`, :class:`KGroupedStream`, :class:`KTable` and
:class:`KGroupedTable`.

They refer to one another (a stream groups into a table that turns back into a stream), so
they live in this one module; each wraps a graph handle and keeps to what leads from one API
class to another. The operators that stay a stream or a table are inherited
(:mod:`.stream_ops`, :mod:`.table_ops`); the windowed and cogrouped streams are in
:mod:`.windowed` and :mod:`.cogrouped`. Every ``count``/``reduce``/``aggregate`` becomes one
:class:`Aggregation` handed to one builder per grouping (:mod:`.aggregate_nodes`). Stateful
operators take ``store=`` (a name or a ``Materialized``), every operator ``name=``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from streamrt.errors import ConfigError
from streamrt.runtime.dsl import join_nodes
from streamrt.runtime.dsl.aggregate_nodes import (
    aggregate_stream,
)
from streamrt.runtime.dsl.cogroup_nodes import stream_to_table
from streamrt.runtime.dsl.cogrouped import CogroupedKStream
from streamrt.runtime.dsl.global_table import GlobalKTable
from streamrt.runtime.dsl.join_nodes import StreamJoiner
from streamrt.runtime.dsl.options import (
    Grouped,
    Joined,
    StreamJoined,
    pick,
    removed_keywords,
    removed_positional,
)
from streamrt.runtime.dsl.stream_ops import KeyValueMapper, StreamOperations, opt_serde
from streamrt.runtime.dsl.table_nodes import aggregate_table, group_table
from streamrt.runtime.dsl.table_ops import TableOperations
from streamrt.runtime.dsl.windowed import SessionWindowedKStream, TimeWindowedKStream
from streamrt.runtime.graph.materialized import MaterializedLike, store_argument
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.processors.aggregate import Aggregation, counting, reducing
from streamrt.runtime.processors.join_windows import JoinKind, JoinWindows
from streamrt.runtime.processors.stateless import PassThroughProcessor
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows, Windows, to_ms
from streamrt.serde import IntSerde, SerdeLike

__all__ = (
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "SessionWindowedKStream",
    "TimeWindowedKStream",
)


class JoinArgs(TypedDict, total=False):
    """The keyword options ``KStream.join`` and ``left_join`` share (each optional)."""

    windows: JoinWindows | None
    key_mapper: KeyValueMapper | None
    name: str | None
    in_memory: bool | None
    stream_joined: StreamJoined | None
    joined: Joined | None
    grace: int | timedelta | None


def _join_options(
    name: str | None, in_memory: bool | None, stream_joined: StreamJoined | None
) -> tuple[str | None, bool | None]:
    """``name``/``in_memory`` merged with a :class:`StreamJoined` (a keyword wins)."""
    sj = stream_joined or StreamJoined()
    return pick(name, sj.name), pick(in_memory, sj.in_memory)


class KStream(StreamOperations["KStream"]):
    """A record stream. Operators return new streams; nothing runs until the app starts."""

    def _wrap(self, node: StreamNode) -> KStream:
        return KStream(node)

    def join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: StreamJoiner,
        **options: Unpack[JoinArgs],
    ) -> KStream:
        """Inner join with a KStream (``windows`` required), a KTable, or a GlobalKTable
        (``key_mapper(key, value)`` gives the table key); ``grace`` (ms or a timedelta): a
        versioned table's join waits that long for late table updates. A table join's
        ``joined`` (Kafka's ``Joined``) carries the name, grace and the stream's serdes for
        its repartition; a stream join's ``stream_joined`` the name and store kind."""
        return self._join_with(other, joiner, "inner", options)

    def left_join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: StreamJoiner,
        **options: Unpack[JoinArgs],
    ) -> KStream:
        """Like :meth:`join`, but a record without partner gives ``joiner(value, None)``."""
        return self._join_with(other, joiner, "left", options)

    def _join_with(
        self, other: object, joiner: StreamJoiner, kind: JoinKind, options: JoinArgs
    ) -> KStream:
        """One path for ``join``/``left_join``: their keyword options unpacked for ``_join``."""
        unknown = set(options) - set(JoinArgs.__annotations__)
        if unknown:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        j = options.get("joined") or Joined()
        grace = pick(options.get("grace"), j.grace)
        timing = (options.get("windows"), None if grace is None else to_ms(grace, "grace"))
        name, in_memory = _join_options(
            pick(options.get("name"), j.name),
            options.get("in_memory"),
            options.get("stream_joined"),
        )
        stream = self.node.with_serdes(opt_serde(j.key_serde), opt_serde(j.value_serde))
        key_mapper = options.get("key_mapper")
        return self._join(stream, other, joiner, kind, timing, key_mapper, name, in_memory)

    def outer_join(
        self,
        other: KStream,
        joiner: StreamJoiner,
        *,
        windows: JoinWindows,
        name: str | None = None,
        in_memory: bool | None = None,
        stream_joined: StreamJoined | None = None,
    ) -> KStream:
        """Windowed outer join of two streams: unmatched records of either side are emitted
        (``joiner(v, None)`` / ``joiner(None, v)``) once their window closes."""
        return self._join(
            self.node,
            other,
            joiner,
            "outer",
            (windows, None),
            None,
            *_join_options(name, in_memory, stream_joined),
        )

    def _join(
        self,
        stream: StreamNode,
        other: object,
        joiner: StreamJoiner,
        kind: JoinKind,
        timing: tuple[JoinWindows | None, int | None],
        key_mapper: KeyValueMapper | None,
        name: str | None,
        in_memory: bool | None,
    ) -> KStream:
        windows, grace = timing
        if grace is not None and not isinstance(other, KTable):
            raise ConfigError("grace= is for a stream-table join (a stream join: JoinWindows)")
        if isinstance(other, KStream):
            if windows is None:
                raise ConfigError("a KStream-KStream join needs windows=JoinWindows...")
            return KStream(
                join_nodes.stream_stream_join(
                    stream, other.node, joiner, windows, kind, name, in_memory
                )
            )
        if kind == "outer":
            raise ConfigError("outer_join is only defined between two streams")
        left = kind == "left"
        if isinstance(other, KTable):
            node = join_nodes.stream_table_join(stream, other.node, joiner, left, name, grace)
            return KStream(node)
        if isinstance(other, GlobalKTable):
            if key_mapper is None:
                raise ConfigError("a KStream-GlobalKTable join needs key_mapper=fn(key, value)")
            spec = other.spec
            node = join_nodes.stream_global_join(stream, spec, key_mapper, joiner, left, name)
            return KStream(node)
        raise ConfigError(f"cannot join a KStream with {type(other).__name__}")

    def to_table(
        self, *removed: Any, store: MaterializedLike = None, name: str | None = None
    ) -> KTable:
        """This stream as a table: each record an update of its key (null keys dropped, a
        null value a delete); repartitioned first if the key changed (Kafka's ``toTable``)."""
        removed_positional("to_table", removed, "store=")
        return KTable(stream_to_table(self.node, store, name))

    def group_by_key(
        self,
        grouped: Grouped | None = None,
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KGroupedStream:
        """Group by the current key (repartitioned first if it changed); ``grouped`` carries
        the repartition name and serdes too (a keyword wins)."""
        g = grouped or Grouped()
        name, key_serde = pick(name, g.name), pick(key_serde, g.key_serde)
        value_serde = pick(value_serde, g.value_serde)
        stream = self.node.with_serdes(opt_serde(key_serde), opt_serde(value_serde))
        return KGroupedStream(stream.repartitioned_if_needed(name))

    def group_by(
        self,
        selector: KeyValueMapper,
        grouped: Grouped | None = None,
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KGroupedStream:
        """Re-key by ``selector`` through ``<application.id>-<name>-repartition``."""
        g = grouped or Grouped()
        name, key_serde = pick(name, g.name), pick(key_serde, g.key_serde)
        value_serde = pick(value_serde, g.value_serde)
        mapped = self.map(
            lambda k, v: (selector(k, v), v), key_serde=key_serde, value_serde=value_serde
        )
        return KGroupedStream(mapped.node.repartition(name))


class KGroupedStream:
    """A stream grouped by key, ready for an aggregation. ``store`` is a store name or a
    ``Materialized`` (None: an internal store); ``name`` names the processor; the value
    serde is the stream's unless given (``value_serde=`` or the ``Materialized``'s)."""

    def __init__(self, stream: StreamNode) -> None:
        self.stream = stream

    def count(
        self,
        *removed: Any,
        store: MaterializedLike = None,
        name: str | None = None,
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        removed_positional("count", removed, "store=")
        return self._aggregate(counting(), store, IntSerde(), in_memory, caching, name)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *removed: Any,
        store: MaterializedLike = None,
        name: str | None = None,
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        removed_positional("reduce", removed, "store=")
        aggregation = reducing(reducer)
        return self._aggregate(aggregation, store, None, in_memory, caching, name)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *removed: Any,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        """``in_memory`` picks the store kind (None: the ``default.dsl.store`` config);
        ``caching=False`` sends every update downstream (no record cache for this store)."""
        removed_positional("aggregate", removed, "store=")
        aggregation = Aggregation(initializer, aggregator)
        return self._aggregate(aggregation, store, value_serde, in_memory, caching, name)

    def _aggregate(
        self,
        aggregation: Aggregation,
        store: MaterializedLike,
        value_serde: SerdeLike,
        in_memory: bool | None,
        caching: bool,
        name: str | None,
    ) -> KTable:
        m = store_argument(self.stream.topology, store, "KSTREAM-AGGREGATE")
        vser = pick(value_serde, m.value_serde) or self.stream.value_serde
        in_memory = pick(in_memory, m.in_memory)
        node = aggregate_stream(self.stream, aggregation, m.name, vser, in_memory, caching, name)
        return KTable(node)

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream[KTable]:
        """Start a cogrouped aggregation with this stream's ``aggregator`` (KIP-150)."""
        return CogroupedKStream([(self.stream, aggregator)], KTable)

    def windowed_by(
        self, windows: Windows | None = None, *removed: Any, **removed_kw: Any
    ) -> TimeWindowedKStream[KTable] | SessionWindowedKStream[KTable]:
        """Window the grouped stream: ``TimeWindows`` (tumbling/hopping), ``SlidingWindows``
        or ``SessionWindows``."""
        removed_positional("windowed_by", removed, "TimeWindows...advance_by(...)")
        removed_keywords("windowed_by", removed_kw)
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self.stream, windows, KTable)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedKStream(self.stream, windows, KTable)
        raise TypeError(
            f"windowed_by needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r} "
            "(a size in ms: TimeWindows.of_size_and_grace(size, grace))"
        )


class KTable(TableOperations["KTable"]):
    """A changelog stream materialised in a named store (or read through its parent's)."""

    def _wrap(self, node: TableNode) -> KTable:
        return KTable(node)

    def group_by(
        self,
        selector: Callable[[Any, Any], tuple[Any, Any]],
        grouped: Grouped | None = None,
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KGroupedTable:
        """Re-key rows by ``selector(key, value) -> (new_key, new_value)`` for an aggregation
        with adder and subtractor (always through a repartition topic); ``grouped`` carries
        the name and serdes too (a keyword wins)."""
        g = grouped or Grouped()
        name, key_serde = pick(name, g.name), pick(key_serde, g.key_serde)
        value_serde = pick(value_serde, g.value_serde)
        return KGroupedTable(group_table(self.node, selector, name, key_serde, value_serde))

    def to_stream(
        self,
        key_mapper: KeyValueMapper | None = None,
        *,
        key_serde: SerdeLike = None,
        name: str | None = None,
    ) -> KStream:
        """The table's changelog as a stream (a delete: a null value); ``key_mapper(key,
        value)`` gives each record a new key (Kafka's ``toStream(KeyValueMapper)``: a later
        join or grouping repartitions first)."""
        topology = self.topology
        node = topology.add_processor(
            name or topology.new_name("KTABLE-TOSTREAM"), PassThroughProcessor, self.node.name
        )
        stream = KStream(StreamNode(topology, node, self.node.key_serde, self.node.value_serde))
        if key_mapper is None:
            return KStream(stream.node.with_serdes(opt_serde(key_serde), None))
        return stream.select_key(key_mapper, key_serde=key_serde)


class KGroupedTable:
    """A table re-keyed by ``KTable.group_by``: aggregations see each update as an
    addition to the new group and a subtraction from the old one. ``store`` is a name or
    a ``Materialized`` (None: an internal store); the value serde is the table's unless
    given."""

    def __init__(self, grouped: StreamNode) -> None:
        self.grouped = grouped

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        *,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> KTable:
        """``adder(key, value, agg)`` / ``subtractor(key, value, agg)``."""
        removed_keywords("KGroupedTable.aggregate", removed)
        aggregation = Aggregation(initializer, adder, subtractor)
        return self._aggregate(aggregation, store, value_serde, name)

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        *,
        store: MaterializedLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> KTable:
        """``adder(agg, value)``, ``subtractor(agg, value)``; the first value is the aggregate."""
        removed_keywords("KGroupedTable.reduce", removed)
        return self._aggregate(reducing(adder, subtractor), store, None, name)

    def count(
        self, *, store: MaterializedLike = None, name: str | None = None, **removed: Any
    ) -> KTable:
        removed_keywords("KGroupedTable.count", removed)
        return self._aggregate(counting(), store, IntSerde(), name)

    def _aggregate(
        self,
        aggregation: Aggregation,
        store: MaterializedLike,
        value_serde: SerdeLike,
        name: str | None,
    ) -> KTable:
        m = store_argument(self.grouped.topology, store, "KTABLE-AGGREGATE")
        vser = pick(value_serde, m.value_serde) or self.grouped.value_serde
        return KTable(aggregate_table(self.grouped, aggregation, m, vser, name))
