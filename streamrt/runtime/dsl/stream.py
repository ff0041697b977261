"""The DSL's streams: :class:`KStream`.

A KStream wraps a :class:`StreamNode` (the graph handle); stateless operators add their
processor from :mod:`streamrt.runtime.processors.stateless`, joins go through
:mod:`.join_nodes`, grouping returns a :class:`KGroupedStream` (:mod:`.grouped`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.dsl import join_nodes
from streamrt.runtime.dsl.global_table import GlobalKTable
from streamrt.runtime.dsl.grouped import KGroupedStream
from streamrt.runtime.dsl.table import KTable
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors import stateless as ops
from streamrt.runtime.processors.join_windows import Joiner, JoinKind, JoinWindows
from streamrt.serde import Serde, SerdeLike, serde_for

__all__ = ("KStream",)

Predicate = Callable[[Any, Any], bool]
KeyValueMapper = Callable[[Any, Any], Any]


def _opt(spec: SerdeLike) -> Serde[Any] | None:
    return None if spec is None else serde_for(spec)


class KStream:
    """A record stream. Operators return new streams; nothing runs until the app starts."""

    def __init__(self, node: StreamNode) -> None:
        self.node = node

    @property
    def topology(self) -> Topology:
        return self.node.topology

    def _then(
        self,
        prefix: str,
        processor: Callable[[], Processor],
        *,
        key_changed: bool | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KStream:
        name = self.topology.new_name(prefix)
        return KStream(
            self.node.then(
                name,
                processor,
                key_changed=key_changed,
                key_serde=_opt(key_serde),
                value_serde=_opt(value_serde),
            )
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
            key_serde=key_serde,
            value_serde=value_serde,
        )

    def map_values(self, fn: Callable[[Any], Any], *, value_serde: SerdeLike = None) -> KStream:
        return self._then(
            "KSTREAM-MAPVALUES", lambda: ops.MapValuesProcessor(fn), value_serde=value_serde
        )

    def filter(self, predicate: Predicate) -> KStream:
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
            key_serde=key_serde,
            value_serde=value_serde,
        )

    def flat_map_values(
        self, fn: Callable[[Any], Iterable[Any]], *, value_serde: SerdeLike = None
    ) -> KStream:
        """Zero or more values per record, each with the record's key (no repartition)."""
        return self._then(
            "KSTREAM-FLATMAPVALUES", lambda: ops.FlatMapValuesProcessor(fn), value_serde=value_serde
        )

    def select_key(self, fn: KeyValueMapper, *, key_serde: SerdeLike = None) -> KStream:
        """New key ``fn(key, value)``; a later join or grouping repartitions first."""
        return self._then(
            "KSTREAM-KEY-SELECT",
            lambda: ops.MapProcessor(lambda k, v: (fn(k, v), v)),
            key_changed=True,
            key_serde=key_serde,
        )

    def peek(self, action: Callable[[Any, Any], None]) -> KStream:
        return self._then("KSTREAM-PEEK", lambda: ops.PeekProcessor(action))

    def foreach(self, action: Callable[[Any, Any], None]) -> None:
        """Call ``action(key, value)`` for each record; a terminal operation."""
        self._then("KSTREAM-FOREACH", lambda: ops.ForeachProcessor(action))

    def process(
        self,
        supplier: Callable[[], Processor],
        *,
        stores: tuple[str, ...] = (),
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KStream:
        """Attach a processor-API processor (a fresh one per task from ``supplier``)."""
        name = self.topology.new_name("KSTREAM-PROCESSOR")
        return KStream(
            self.node.then(
                name,
                supplier,
                key_changed=True,
                key_serde=_opt(key_serde),
                value_serde=_opt(value_serde),
                stores=stores,
            )
        )

    def split(self, *predicates: Predicate, default: bool = False) -> list[KStream]:
        """One stream per predicate; a record goes to the first that matches (``branch``).

        ``default=True`` adds a last stream with the records no predicate matched (Kafka's
        ``defaultBranch``); without it they are dropped.
        """
        name = self.topology.new_name("KSTREAM-BRANCH")
        children = [f"{name}-{i}" for i in range(len(predicates) + (1 if default else 0))]
        pairs = list(zip(predicates, children[: len(predicates)], strict=True))
        if default:
            fallback = children[-1]
            branch = self.node.then(name, lambda: ops.BranchWithDefaultProcessor(pairs, fallback))
        else:
            branch = self.node.then(name, lambda: ops.BranchProcessor(pairs))
        return [KStream(branch.then(child, ops.PassThroughProcessor)) for child in children]

    branch = split

    def merge(self, other: KStream) -> KStream:
        topology = self.topology
        name = topology.add_processor(
            topology.new_name("KSTREAM-MERGE"),
            ops.PassThroughProcessor,
            self.node.name,
            other.node.name,
        )
        key_changed = self.node.key_changed or other.node.key_changed
        return KStream(
            StreamNode(topology, name, self.node.key_serde, self.node.value_serde, key_changed)
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
        stream = self.node.with_serdes(_opt(key_serde), _opt(value_serde))
        name = name or self.topology.new_name("KSTREAM-REPARTITION")
        return KStream(stream.repartition(name, partitions=partitions))

    def to(self, topic: str, *, key_serde: SerdeLike = None, value_serde: SerdeLike = None) -> None:
        stream = self.node.with_serdes(_opt(key_serde), _opt(value_serde))
        self.topology.add_sink(
            self.topology.new_name("KSTREAM-SINK"),
            topic,
            stream.key_serde,
            stream.value_serde,
            stream.name,
        )

    def join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Joiner,
        *,
        windows: JoinWindows | None = None,
        key_mapper: KeyValueMapper | None = None,
        name: str | None = None,
        in_memory: bool | None = None,
    ) -> KStream:
        """Inner join with a KStream (``windows`` required), a KTable, or a GlobalKTable
        (``key_mapper(key, value)`` gives the table key). See docs/dsl.md."""
        return self._join(other, joiner, "inner", windows, key_mapper, name, in_memory)

    def left_join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Joiner,
        *,
        windows: JoinWindows | None = None,
        key_mapper: KeyValueMapper | None = None,
        name: str | None = None,
        in_memory: bool | None = None,
    ) -> KStream:
        """Like :meth:`join`, but a record without partner gives ``joiner(value, None)``."""
        return self._join(other, joiner, "left", windows, key_mapper, name, in_memory)

    def outer_join(
        self,
        other: KStream,
        joiner: Joiner,
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
        other: object,
        joiner: Joiner,
        kind: JoinKind,
        windows: JoinWindows | None,
        key_mapper: KeyValueMapper | None,
        name: str | None,
        in_memory: bool | None,
    ) -> KStream:
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
            node = join_nodes.stream_table_join(self.node, other.node, joiner, left, name)
            return KStream(node)
        if isinstance(other, GlobalKTable):
            if key_mapper is None:
                raise ConfigError("a KStream-GlobalKTable join needs key_mapper=fn(key, value)")
            spec = other.spec
            return KStream(join_nodes.stream_global_join(self.node, spec, key_mapper, joiner, left))
        raise ConfigError(f"cannot join a KStream with {type(other).__name__}")

    def group_by_key(
        self, *, name: str | None = None, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> KGroupedStream:
        stream = self.node.with_serdes(_opt(key_serde), _opt(value_serde))
        return KGroupedStream(stream.repartitioned_if_needed(name))

    def group_by(
        self,
        selector: KeyValueMapper,
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> KGroupedStream:
        """Re-key by ``selector`` through ``<application.id>-<name>-repartition``."""
        mapped = self.map(
            lambda k, v: (selector(k, v), v), key_serde=key_serde, value_serde=value_serde
        )
        return KGroupedStream(mapped.node.repartition(name))
