"""The DSL: KStream, KGroupedStream, TimeWindowedKStream and KTable over a Topology."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime import operators as ops
from streamrt.runtime.processor import Processor, Windowed
from streamrt.runtime.topology import REPARTITION_SUFFIX, StoreSpec, Topology
from streamrt.serde import IntSerde, Serde, SerdeLike, serde_for
from streamrt.state.store import IN_MEMORY, ROCKS_DB, StoreKind

__all__ = ("KGroupedStream", "KStream", "KTable", "TimeWindowedKStream", "WindowedSerde")

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

    def split(self, *predicates: Callable[[Any, Any], bool]) -> list[KStream]:
        """One stream per predicate; a record goes to the first that matches (``branch``)."""
        branch_name = self.topology.new_name("KSTREAM-BRANCH")
        children = [f"{branch_name}-{i}" for i in range(len(predicates))]
        pairs = list(zip(predicates, children, strict=True))
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

    def _repartition(self, name: str | None) -> KStream:
        base = (
            name or self.topology.new_name("KSTREAM-AGGREGATE-STATE-STORE")
        ) + REPARTITION_SUFFIX
        sink = self.topology.add_sink(
            f"{base}-sink", base, self.key_serde, self.value_serde, self.node, internal=True
        )
        del sink
        source = self.topology.add_source(
            f"{base}-source", base, self.key_serde, self.value_serde, internal=True
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

    def windowed_by(self, size_ms: int, advance_ms: int | None = None) -> TimeWindowedKStream:
        """Tumbling windows of ``size_ms``, or hopping windows advancing by ``advance_ms``."""
        advance = size_ms if advance_ms is None else advance_ms
        if size_ms <= 0 or not 0 < advance <= size_ms:
            raise ConfigError("window size must be positive and 0 < advance <= size")
        return TimeWindowedKStream(self, size_ms, advance)


class TimeWindowedKStream:
    def __init__(self, grouped: KGroupedStream, size_ms: int, advance_ms: int) -> None:
        self.grouped = grouped
        self.size_ms = size_ms
        self.advance_ms = advance_ms

    def count(self, store: str, *, in_memory: bool | None = None, caching: bool = True) -> KTable:
        return self.aggregate(
            lambda: 0,
            lambda _k, _v, agg: agg + 1,
            store=store,
            value_serde=IntSerde(),
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
        size, advance = self.size_ms, self.advance_ms
        return self.grouped._aggregate(
            "KSTREAM-WINDOWED-AGGREGATE",
            store,
            serde_for(value_serde),
            lambda: ops.WindowedAggregateProcessor(store, size, advance, initializer, aggregator),
            WindowedSerde(self.grouped.stream.key_serde),
            in_memory,
            caching,
        )


class KTable:
    """A changelog stream materialised in a named store."""

    def __init__(
        self,
        topology: Topology,
        node: str,
        store: str,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
    ) -> None:
        self.topology = topology
        self.node = node
        self.store = store
        self.key_serde = key_serde
        self.value_serde = value_serde

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
