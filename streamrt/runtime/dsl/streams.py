"""The DSL's API classes: :class:`KStream`, :class:`KGroupedStream` and the windowed streams,
:class:`KTable` and :class:`KGroupedTable`.

They refer to one another (a stream groups into a table that turns back into a stream), so
they live in this one module; each wraps a graph handle and keeps to what leads from one API
class to another. The operators that stay a stream or a table are inherited
(:mod:`.stream_ops`, :mod:`.table_ops`); every ``count``/``reduce``/``aggregate`` becomes one
:class:`Aggregation` handed to one builder per grouping (:mod:`.aggregate_nodes`, where
windowed aggregations materialize a segmented window/session store and return a table whose
keys are :class:`~streamrt.runtime.processor.Windowed`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from streamrt.errors import ConfigError
from streamrt.runtime.dsl import join_nodes
from streamrt.runtime.dsl.aggregate_nodes import (
    EmitStrategy,
    WindowStoreOptions,
    aggregate_stream,
    windowed_aggregate,
    windows_argument,
)
from streamrt.runtime.dsl.cogroup_nodes import cogroup_aggregate, stream_to_table
from streamrt.runtime.dsl.global_table import GlobalKTable
from streamrt.runtime.dsl.join_nodes import StreamJoiner
from streamrt.runtime.dsl.options import Grouped, StreamJoined, pick
from streamrt.runtime.dsl.stream_ops import KeyValueMapper, StreamOperations, opt_serde
from streamrt.runtime.dsl.table_nodes import aggregate_table, group_table
from streamrt.runtime.dsl.table_ops import TableOperations
from streamrt.runtime.graph.materialized import MaterializedLike
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.processors.aggregate import Aggregation, counting, reducing
from streamrt.runtime.processors.join_windows import JoinKind, JoinWindows
from streamrt.runtime.processors.stateless import PassThroughProcessor
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows, Windows
from streamrt.serde import IntSerde, SerdeLike

__all__ = (
    "CogroupedKStream",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "SessionWindowedKStream",
    "TimeWindowedKStream",
)

Retention = int | timedelta | None


class JoinArgs(TypedDict, total=False):
    """The keyword options ``KStream.join`` and ``left_join`` share (each optional)."""

    windows: JoinWindows | None
    key_mapper: KeyValueMapper | None
    name: str | None
    in_memory: bool | None
    stream_joined: StreamJoined | None
    grace: int | None


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
        (``key_mapper(key, value)`` gives the table key); ``grace`` ms: a versioned table's
        join waits that long for late table updates (Kafka's ``Joined.withGracePeriod``)."""
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
        timing = (options.get("windows"), options.get("grace"))
        name, in_memory = _join_options(
            options.get("name"), options.get("in_memory"), options.get("stream_joined")
        )
        return self._join(other, joiner, kind, timing, options.get("key_mapper"), name, in_memory)

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
            other,
            joiner,
            "outer",
            (windows, None),
            None,
            *_join_options(name, in_memory, stream_joined),
        )

    def _join(
        self,
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
                    self.node, other.node, joiner, windows, kind, name, in_memory
                )
            )
        if kind == "outer":
            raise ConfigError("outer_join is only defined between two streams")
        left = kind == "left"
        if isinstance(other, KTable):
            node = join_nodes.stream_table_join(self.node, other.node, joiner, left, name, grace)
            return KStream(node)
        if isinstance(other, GlobalKTable):
            if key_mapper is None:
                raise ConfigError("a KStream-GlobalKTable join needs key_mapper=fn(key, value)")
            spec = other.spec
            return KStream(join_nodes.stream_global_join(self.node, spec, key_mapper, joiner, left))
        raise ConfigError(f"cannot join a KStream with {type(other).__name__}")

    def to_table(self, materialized: MaterializedLike = None) -> KTable:
        """This stream as a table: each record an update of its key (null keys dropped, a
        null value a delete); repartitioned first if the key changed (Kafka's ``toTable``)."""
        return KTable(stream_to_table(self.node, materialized))

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
    """A stream grouped by key, ready for an aggregation into a named store."""

    def __init__(self, stream: StreamNode) -> None:
        self.stream = stream

    def count(self, store: str, *, in_memory: bool | None = None, caching: bool = True) -> KTable:
        return self._aggregate(counting(), store, IntSerde(), in_memory, caching)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store: str,
        *,
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        value_serde = self.stream.value_serde
        return self._aggregate(reducing(reducer), store, value_serde, in_memory, caching)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        """``in_memory`` picks the store kind (None: the ``default.dsl.store`` config);
        ``caching=False`` sends every update downstream (no record cache for this store)."""
        aggregation = Aggregation(initializer, aggregator)
        return self._aggregate(aggregation, store, value_serde, in_memory, caching)

    def _aggregate(
        self,
        aggregation: Aggregation,
        store: str,
        value_serde: SerdeLike,
        in_memory: bool | None,
        caching: bool,
    ) -> KTable:
        return KTable(
            aggregate_stream(self.stream, aggregation, store, value_serde, in_memory, caching)
        )

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Start a cogrouped aggregation with this stream's ``aggregator`` (KIP-150)."""
        return CogroupedKStream([(self.stream, aggregator)])

    def windowed_by(
        self,
        windows: Windows | int | None = None,
        advance_ms: int | None = None,
        *,
        size_ms: int | None = None,
    ) -> TimeWindowedKStream | SessionWindowedKStream:
        """Window the grouped stream: ``TimeWindows`` (tumbling/hopping), ``SlidingWindows``
        or ``SessionWindows``. The legacy ``windowed_by(size_ms, advance_ms)`` means
        ``TimeWindows`` with Kafka's old default grace (24 h minus the size)."""
        windows = windows_argument(windows, advance_ms, size_ms)
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self.stream, windows)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedKStream(self.stream, windows)
        raise ConfigError(
            f"windowed_by needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r}"
        )


class CogroupedKStream:
    """Grouped streams aggregated together into one table, each with its own aggregator
    (Kafka's ``CogroupedKStream``); all must be keyed alike (co-partitioned)."""

    def __init__(self, streams: list[tuple[StreamNode, Callable[[Any, Any, Any], Any]]]):
        self.streams = streams

    def cogroup(
        self, grouped: KGroupedStream, aggregator: Callable[[Any, Any, Any], Any]
    ) -> CogroupedKStream:
        return CogroupedKStream([*self.streams, (grouped.stream, aggregator)])

    def aggregate(
        self,
        initializer: Callable[[], Any],
        materialized: MaterializedLike = None,
        *,
        value_serde: SerdeLike = "json",
    ) -> KTable:
        """The aggregate per key in ``materialized`` (None: an internal store)."""
        vser = opt_serde(value_serde)
        assert vser is not None
        return KTable(cogroup_aggregate(self.streams, initializer, materialized, vser))


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

    def to_stream(self) -> KStream:
        topology = self.topology
        name = topology.add_processor(
            topology.new_name("KTABLE-TOSTREAM"), PassThroughProcessor, self.node.name
        )
        node = StreamNode(topology, name, self.node.key_serde, self.node.value_serde)
        return KStream(node)


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


class _WindowedKStream:
    """What time and session windowed streams share: count, reduce and the one windowed
    aggregate path (``aggregate`` differs: sessions also take a merger)."""

    windows: Windows

    def __init__(self, stream: StreamNode) -> None:
        self.stream = stream

    def count(
        self,
        store: str,
        *,
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        options = WindowStoreOptions(in_memory, retention, emit_strategy)
        return self._aggregate(counting(), store, IntSerde(), options)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store: str,
        *,
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        options = WindowStoreOptions(in_memory, retention, emit_strategy)
        return self._aggregate(reducing(reducer), store, self.stream.value_serde, options)

    def _aggregate(
        self,
        aggregation: Aggregation,
        store: str,
        value_serde: SerdeLike,
        options: WindowStoreOptions,
    ) -> KTable:
        return KTable(
            windowed_aggregate(self.stream, self.windows, aggregation, store, value_serde, options)
        )


class TimeWindowedKStream(_WindowedKStream):
    """A grouped stream over time (tumbling/hopping) or sliding windows."""

    def __init__(self, stream: StreamNode, windows: TimeWindows | SlidingWindows) -> None:
        super().__init__(stream)
        self.windows: TimeWindows | SlidingWindows = windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        """Aggregate per key and window into the window store ``store`` (queryable).

        ``retention`` (default: size + grace; sliding: 2·difference + grace) must not be
        shorter than that minimum."""
        options = WindowStoreOptions(in_memory, retention, emit_strategy)
        return self._aggregate(Aggregation(initializer, aggregator), store, value_serde, options)

    @property
    def size_ms(self) -> int:
        w = self.windows
        return w.size_ms if isinstance(w, TimeWindows) else w.time_difference_ms

    @property
    def advance_ms(self) -> int:
        w = self.windows
        return w.advance_ms if isinstance(w, TimeWindows) else 1


class SessionWindowedKStream(_WindowedKStream):
    """A grouped stream over session windows; aggregations also need a ``merger``."""

    def __init__(self, stream: StreamNode, windows: SessionWindows) -> None:
        super().__init__(stream)
        self.windows: SessionWindows = windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        """Aggregate per key and session into the session store ``store`` (queryable);
        ``merger(key, agg1, agg2)`` combines two sessions a record bridges."""
        aggregation = Aggregation(initializer, aggregator, merger=merger)
        options = WindowStoreOptions(in_memory, retention, emit_strategy)
        return self._aggregate(aggregation, store, value_serde, options)
