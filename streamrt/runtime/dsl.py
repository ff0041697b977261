"""The DSL: KStream, KGroupedStream, TimeWindowedKStream and KTable over a Topology."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from streamrt.errors import ConfigError
from streamrt.runtime import operators as ops
from streamrt.runtime.processor import Processor, Windowed
from streamrt.runtime.suppress import Suppressed
from streamrt.runtime.tables import KGroupedTable, MaterializedLike, ValueGetter, store_getter
from streamrt.runtime.topology import REPARTITION_SUFFIX, StoreSpec, Topology
from streamrt.runtime.windowed import (
    SessionWindowedKStream,
    TimeWindowedKStream,
    add_suppress,
    windowed_stream,
)
from streamrt.runtime.windows import DEFAULT_LEGACY_GRACE_MS, TimeWindows, Windows
from streamrt.serde import IntSerde, Serde, SerdeLike, serde_for
from streamrt.state.store import IN_MEMORY, ROCKS_DB, StoreKind

if TYPE_CHECKING:
    from streamrt.runtime.global_table import GlobalKTable
    from streamrt.runtime.joins import JoinKind, JoinWindows

__all__ = ("KGroupedStream", "KStream", "KTable", "WindowedSerde")

_WINDOW = struct.Struct(">qq")


class WindowedSerde:
    """Windowed keys: the inner key's bytes, then window start and end (8 bytes each)."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner

    def serialize(self, value: Windowed | None) -> bytes | None:
        if value is None:
            return None
        inner = self.inner.serialize(value.key) or b""
        return inner + _WINDOW.pack(value.start, value.end)

    def deserialize(self, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        start, end = _WINDOW.unpack(data[-16:])
        return Windowed(self.inner.deserialize(data[:-16]), start, end)


class KStream:
    """A record stream. Operators return new streams; nothing runs until the app starts."""

    def __init__(
        self,
        topology: Topology,
        node: str,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        key_changed: bool = False,
    ) -> None:
        self.topology = topology
        self.node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.key_changed = key_changed

    def _then(
        self,
        prefix: str,
        processor: Callable[[], Processor],
        *,
        key_changed: bool | None = None,
        key_serde: Serde[Any] | None = None,
        value_serde: Serde[Any] | None = None,
    ) -> KStream:
        name = self.topology.add_processor(self.topology.new_name(prefix), processor, self.node)
        return KStream(
            self.topology,
            name,
            key_serde or self.key_serde,
            value_serde or self.value_serde,
            self.key_changed if key_changed is None else key_changed,
        )

    def map(
        self,
        fn: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KStream:
        return self._then(
            "KSTREAM-MAP",
            lambda: ops.MapProcessor(fn),
            key_changed=True,
            key_serde=_opt(key_serde),
            value_serde=_opt(value_serde),
        )

    def map_values(self, fn: Callable[[Any], Any], *, value_serde: SerdeLike = None) -> KStream:
        return self._then(
            "KSTREAM-MAPVALUES", lambda: ops.MapValuesProcessor(fn), value_serde=_opt(value_serde)
        )

    def filter(self, predicate: Callable[[Any, Any], bool]) -> KStream:
        return self._then("KSTREAM-FILTER", lambda: ops.FilterProcessor(predicate))

    def flat_map(
        self,
        fn: Callable[[Any, Any], Iterable[tuple[Any, Any]]],
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KStream:
        return self._then(
            "KSTREAM-FLATMAP",
            lambda: ops.FlatMapProcessor(fn),
            key_changed=True,
            key_serde=_opt(key_serde),
            value_serde=_opt(value_serde),
        )

    def peek(self, action: Callable[[Any, Any], None]) -> KStream:
        return self._then("KSTREAM-PEEK", lambda: ops.PeekProcessor(action))

    def process(
        self,
        supplier: Callable[[], Processor],
        *,
        stores: tuple[str, ...] = (),
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KStream:
        """Attach a processor-API processor (a fresh one per task from ``supplier``)."""
        name = self.topology.add_processor(
            self.topology.new_name("KSTREAM-PROCESSOR"), supplier, self.node, stores=stores
        )
        return KStream(
            self.topology,
            name,
            _opt(key_serde) or self.key_serde,
            _opt(value_serde) or self.value_serde,
            key_changed=True,
        )

    def split(
        self, *predicates: Callable[[Any, Any], bool], default: bool = False
    ) -> list[KStream]:
        """One stream per predicate; a record goes to the first that matches (``branch``).

        ``default=True`` adds a last stream with the records no predicate matched (Kafka's
        ``defaultBranch``); without it they are dropped.
        """
        branch_name = self.topology.new_name("KSTREAM-BRANCH")
        count = len(predicates) + (1 if default else 0)
        children = [f"{branch_name}-{i}" for i in range(count)]
        pairs = list(zip(predicates, children[: len(predicates)], strict=True))
        if default:
            fallback = children[-1]
            self.topology.add_processor(
                branch_name, lambda: ops.BranchWithDefaultProcessor(pairs, fallback), self.node
            )
        else:
            self.topology.add_processor(branch_name, lambda: ops.BranchProcessor(pairs), self.node)
        return [
            KStream(
                self.topology,
                self.topology.add_processor(child, ops.PassThroughProcessor, branch_name),
                self.key_serde,
                self.value_serde,
                self.key_changed,
            )
            for child in children
        ]

    branch = split

    def merge(self, other: KStream) -> KStream:
        name = self.topology.add_processor(
            self.topology.new_name("KSTREAM-MERGE"),
            ops.PassThroughProcessor,
            self.node,
            other.node,
        )
        return KStream(
            self.topology,
            name,
            self.key_serde,
            self.value_serde,
            self.key_changed or other.key_changed,
        )

    # -- stateless operators and joins (issue 13; see runtime.joins, runtime.global_table) --

    def foreach(self, action: Callable[[Any, Any], None]) -> None:
        """Call ``action(key, value)`` for each record; a terminal operation."""
        self.topology.add_processor(
            self.topology.new_name("KSTREAM-FOREACH"),
            lambda: ops.ForeachProcessor(action),
            self.node,
        )

    def select_key(self, fn: Callable[[Any, Any], Any], *, key_serde: SerdeLike = None) -> KStream:
        """New key ``fn(key, value)``; a later join or grouping repartitions first."""
        return self._then(
            "KSTREAM-KEY-SELECT",
            lambda: ops.MapProcessor(lambda k, v: (fn(k, v), v)),
            key_changed=True,
            key_serde=_opt(key_serde),
        )

    def flat_map_values(
        self, fn: Callable[[Any], Iterable[Any]], *, value_serde: SerdeLike = None
    ) -> KStream:
        """Zero or more values per record, each with the record's key (no repartition)."""
        return self._then(
            "KSTREAM-FLATMAPVALUES",
            lambda: ops.FlatMapValuesProcessor(fn),
            value_serde=_opt(value_serde),
        )

    def repartition(
        self,
        partitions: int | None = None,
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KStream:
        """Write to ``<application.id>-<name>-repartition`` (``partitions`` partitions, else
        as many as the input) and read it back: downstream tasks follow the new key."""
        if partitions is not None and partitions < 1:
            raise ConfigError(f"repartition: partitions must be >= 1, got {partitions}")
        stream = KStream(
            self.topology,
            self.node,
            _opt(key_serde) or self.key_serde,
            _opt(value_serde) or self.value_serde,
            self.key_changed,
        )
        return stream._repartition(
            name or self.topology.new_name("KSTREAM-REPARTITION"), partitions=partitions
        )

    def join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Callable[[Any, Any], Any],
        *,
        windows: JoinWindows | None = None,
        key_mapper: Callable[[Any, Any], Any] | None = None,
        name: str | None = None,
        in_memory: bool | None = None,
    ) -> KStream:
        """Inner join with a KStream (``windows`` required), a KTable, or a GlobalKTable
        (``key_mapper(key, value)`` gives the table key). See docs/dsl.md."""
        return self._join(other, joiner, "inner", windows, key_mapper, name, in_memory)

    def left_join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Callable[[Any, Any], Any],
        *,
        windows: JoinWindows | None = None,
        key_mapper: Callable[[Any, Any], Any] | None = None,
        name: str | None = None,
        in_memory: bool | None = None,
    ) -> KStream:
        """Like :meth:`join`, but a record without partner gives ``joiner(value, None)``."""
        return self._join(other, joiner, "left", windows, key_mapper, name, in_memory)

    def outer_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        *,
        windows: JoinWindows,
        name: str | None = None,
        in_memory: bool | None = None,
    ) -> KStream:
        """Windowed outer join of two streams: unmatched records of either side are emitted
        (``joiner(v, None)`` / ``joiner(None, v)``) once their window closes."""
        return self._join(other, joiner, "outer", windows, None, name, in_memory)

    def _join(
        self,
        other: Any,
        joiner: Callable[[Any, Any], Any],
        kind: JoinKind,
        windows: JoinWindows | None,
        key_mapper: Callable[[Any, Any], Any] | None,
        name: str | None,
        in_memory: bool | None,
    ) -> KStream:
        from streamrt.runtime.global_table import GlobalKTable, stream_global_join
        from streamrt.runtime.joins import stream_stream_join, stream_table_join

        if isinstance(other, KStream):
            if windows is None:
                raise ConfigError("a KStream-KStream join needs windows=JoinWindows...")
            return stream_stream_join(self, other, joiner, windows, kind, name, in_memory)
        if kind == "outer":
            raise ConfigError("outer_join is only defined between two streams")
        if isinstance(other, KTable):
            return stream_table_join(self, other, joiner, kind == "left", name)
        if isinstance(other, GlobalKTable):
            if key_mapper is None:
                raise ConfigError("a KStream-GlobalKTable join needs key_mapper=fn(key, value)")
            return stream_global_join(self, other, key_mapper, joiner, kind == "left")
        raise ConfigError(f"cannot join a KStream with {type(other).__name__}")

    def to(self, topic: str, *, key_serde: SerdeLike = None, value_serde: SerdeLike = None) -> None:
        self.topology.add_sink(
            self.topology.new_name("KSTREAM-SINK"),
            topic,
            _opt(key_serde) or self.key_serde,
            _opt(value_serde) or self.value_serde,
            self.node,
        )

    def group_by_key(
        self, *, name: str | None = None, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> KGroupedStream:
        stream = self
        if key_serde is not None or value_serde is not None:
            stream = KStream(
                self.topology,
                self.node,
                _opt(key_serde) or self.key_serde,
                _opt(value_serde) or self.value_serde,
                self.key_changed,
            )
        if stream.key_changed:
            stream = stream._repartition(name)
        return KGroupedStream(stream)

    def group_by(
        self,
        selector: Callable[[Any, Any], Any],
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KGroupedStream:
        """Re-key by ``selector`` through ``<application.id>-<name>-repartition``."""
        mapped = self.map(
            lambda k, v: (selector(k, v), v), key_serde=key_serde, value_serde=value_serde
        )
        return KGroupedStream(mapped._repartition(name))

    def _repartition(self, name: str | None, *, partitions: int | None = None) -> KStream:
        base = (
            name or self.topology.new_name("KSTREAM-AGGREGATE-STATE-STORE")
        ) + REPARTITION_SUFFIX
        sink = self.topology.add_sink(
            f"{base}-sink", base, self.key_serde, self.value_serde, self.node, internal=True
        )
        del sink
        source = self.topology.add_source(
            f"{base}-source",
            base,
            self.key_serde,
            self.value_serde,
            internal=True,
            partitions=partitions,
        )
        return KStream(self.topology, source, self.key_serde, self.value_serde)


class KGroupedStream:
    """A stream grouped by key, ready for an aggregation into a named store."""

    def __init__(self, stream: KStream) -> None:
        self.stream = stream

    def _aggregate(
        self,
        prefix: str,
        store: str,
        value_serde: Serde[Any],
        supplier: Callable[[], Processor],
        key_serde: Serde[Any],
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        topology = self.stream.topology
        topology.add_store(StoreSpec(store, key_serde, value_serde, store_kind(in_memory), caching))
        node = topology.add_processor(
            topology.new_name(prefix), supplier, self.stream.node, stores=(store,)
        )
        return KTable(topology, node, store, key_serde, value_serde)

    def count(self, store: str, *, in_memory: bool | None = None, caching: bool = True) -> KTable:
        return self.aggregate(
            lambda: 0,
            lambda _k, _v, agg: agg + 1,
            store=store,
            value_serde=IntSerde(),
            in_memory=in_memory,
            caching=caching,
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store: str,
        *,
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        first = object()
        return self.aggregate(
            lambda: first,
            lambda _k, v, agg: v if agg is first else reducer(agg, v),
            store=store,
            value_serde=self.stream.value_serde,
            in_memory=in_memory,
            caching=caching,
        )

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
        serde = serde_for(value_serde)
        return self._aggregate(
            "KSTREAM-AGGREGATE",
            store,
            serde,
            lambda: ops.AggregateProcessor(store, initializer, aggregator),
            self.stream.key_serde,
            in_memory,
            caching,
        )

    # -- windows (see streamrt.runtime.windowed) -------------------------------------------

    def _windowed_aggregate(
        self,
        prefix: str,
        spec: StoreSpec,
        supplier: Callable[[], Processor],
        close_delay_ms: int,
    ) -> KTable:
        """A windowed aggregation into the window/session store ``spec``; keys Windowed."""
        topology = self.stream.topology
        topology.add_store(spec)
        node = topology.add_processor(
            topology.new_name(prefix), supplier, self.stream.node, stores=(spec.name,)
        )
        return KTable(
            topology,
            node,
            spec.name,
            WindowedSerde(self.stream.key_serde),
            spec.value_serde,
            window_close_delay_ms=close_delay_ms,
        )

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
        if windows is None:
            if size_ms is None:
                raise ConfigError("windowed_by needs windows (TimeWindows, ...) or size_ms")
            windows = size_ms
        if isinstance(windows, bool):
            raise ConfigError(f"windowed_by needs windows, got {windows!r}")
        if isinstance(windows, int):
            size = windows
            if size <= 0:
                raise ConfigError(f"window size must be positive, got {size} ms")
            windows = TimeWindows.of_size_and_grace(
                size, max(DEFAULT_LEGACY_GRACE_MS - size, 0)
            ).advance_by(size if advance_ms is None else advance_ms)
        elif advance_ms is not None:
            raise ConfigError("advance_ms goes with a size in ms; use TimeWindows.advance_by")
        return windowed_stream(self, windows)


class KTable:
    """A changelog stream materialised in a named store."""

    def __init__(
        self,
        topology: Topology,
        node: str,
        store: str | None,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        *,
        window_close_delay_ms: int | None = None,
        getter: ValueGetter | None = None,
    ) -> None:
        self.topology = topology
        self.node = node
        self.store = store  # None for a table read through its parent's store (``getter``)
        self.key_serde = key_serde
        self.value_serde = value_serde
        if getter is None:
            if store is None:
                raise ConfigError("a KTable needs a store or a value getter")
            getter = store_getter(store)
        self.getter = getter
        # windowed tables: how long after a window's end it closes (grace; + gap for sessions)
        self.window_close_delay_ms = window_close_delay_ms

    def suppress(self, suppressed: Suppressed) -> KTable:
        """Hold updates back: ``Suppressed.until_window_closes(...)`` (emit-final, windowed
        tables only) or ``Suppressed.until_time_limit(ms, ...)``; see runtime.suppress."""
        node = add_suppress(
            self.topology,
            self.node,
            self.key_serde,
            self.value_serde,
            self.window_close_delay_ms,
            suppressed,
            self.store or self.node,
        )
        return KTable(
            self.topology,
            node,
            self.store,
            self.key_serde,
            self.value_serde,
            window_close_delay_ms=self.window_close_delay_ms,
            getter=self.getter,
        )

    # -- table operations (issue 13; see runtime.tables and runtime.joins) -----------------

    def filter(
        self, predicate: Callable[[Any, Any], bool], *, materialized: MaterializedLike = None
    ) -> KTable:
        """Keep rows matching ``predicate``; an update that fails it forwards a tombstone."""
        from streamrt.runtime.tables import filter_table

        return filter_table(self, predicate, False, materialized)

    def filter_not(
        self, predicate: Callable[[Any, Any], bool], *, materialized: MaterializedLike = None
    ) -> KTable:
        from streamrt.runtime.tables import filter_table

        return filter_table(self, predicate, True, materialized)

    def map_values(
        self,
        fn: Callable[[Any], Any],
        *,
        value_serde: SerdeLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        from streamrt.runtime.tables import map_values_table

        return map_values_table(self, fn, value_serde, materialized)

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
        from streamrt.runtime.tables import group_table

        return group_table(self, selector, name, key_serde, value_serde)

    def join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
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
        joiner: Callable[[Any, Any], Any],
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        materialized: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        return self._join(other, joiner, "left", foreign_key, materialized, value_serde)

    def outer_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        *,
        materialized: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        return self._join(other, joiner, "outer", None, materialized, value_serde)

    def _join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        kind: JoinKind,
        foreign_key: Callable[[Any], Any] | None,
        materialized: MaterializedLike,
        value_serde: SerdeLike,
    ) -> KTable:
        from streamrt.runtime.joins import table_join

        if not isinstance(other, KTable):
            raise ConfigError(f"cannot join a KTable with {type(other).__name__}")
        if foreign_key is not None:
            from streamrt.runtime.fk_join import foreign_key_join

            return foreign_key_join(
                self, other, foreign_key, joiner, kind == "left", materialized, _opt(value_serde)
            )
        return table_join(self, other, joiner, kind, materialized, _opt(value_serde))

    def to_stream(self) -> KStream:
        name = self.topology.add_processor(
            self.topology.new_name("KTABLE-TOSTREAM"), ops.PassThroughProcessor, self.node
        )
        return KStream(self.topology, name, self.key_serde, self.value_serde)


def store_kind(in_memory: bool | None) -> StoreKind | None:
    """The store kind an ``in_memory=`` argument asks for (None: ``default.dsl.store``)."""
    return None if in_memory is None else (IN_MEMORY if in_memory else ROCKS_DB)


def _opt(spec: SerdeLike) -> Serde[Any] | None:
    return None if spec is None else serde_for(spec)
