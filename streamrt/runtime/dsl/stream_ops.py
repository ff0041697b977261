"""The operations every KStream has that stay streams: stateless operators, branching,
merging, repartitioning and sinks (:class:`StreamOperations`).

The class is generic in the stream type it returns: :class:`~.streams.KStream` subclasses it
and says how to wrap a graph handle (``_wrap``), so these operators build the graph through
:class:`StreamNode` without naming the API classes that refer back to one another (grouping
and joins are in :mod:`.streams`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.options import Named, Produced, name_of, pick
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors import stateless as ops
from streamrt.serde import Serde, SerdeLike, serde_for

__all__ = ("KeyValueMapper", "Predicate", "StreamOperations", "opt_serde")

S = TypeVar("S", bound="StreamOperations[Any]")

Predicate = Callable[[Any, Any], bool]
KeyValueMapper = Callable[[Any, Any], Any]


def opt_serde(spec: SerdeLike) -> Serde[Any] | None:
    """An optional serde argument: None keeps the stream's."""
    return None if spec is None else serde_for(spec)


class StreamOperations(ABC, Generic[S]):
    """A record stream's operators that return a stream; nothing runs until the app starts."""

    def __init__(self, node: StreamNode) -> None:
        self.node = node

    @abstractmethod
    def _wrap(self, node: StreamNode) -> S:
        """The API stream over ``node``."""

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
        named: Named | str | None = None,
    ) -> S:
        name = name_of(named) or self.topology.new_name(prefix)
        return self._wrap(
            self.node.then(
                name,
                processor,
                key_changed=key_changed,
                key_serde=opt_serde(key_serde),
                value_serde=opt_serde(value_serde),
            )
        )

    def map(
        self,
        fn: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        named: Named | str | None = None,
    ) -> S:
        """``named`` (a :class:`Named` or a string) names the processor, here and in the
        other stateless operators."""
        return self._then(
            "KSTREAM-MAP",
            lambda: ops.MapProcessor(fn),
            key_changed=True,
            key_serde=key_serde,
            value_serde=value_serde,
            named=named,
        )

    def map_values(
        self,
        fn: Callable[[Any], Any],
        *,
        value_serde: SerdeLike = None,
        named: Named | str | None = None,
    ) -> S:
        return self._then(
            "KSTREAM-MAPVALUES",
            lambda: ops.MapValuesProcessor(fn),
            value_serde=value_serde,
            named=named,
        )

    def filter(self, predicate: Predicate, *, named: Named | str | None = None) -> S:
        return self._then("KSTREAM-FILTER", lambda: ops.FilterProcessor(predicate), named=named)

    def filter_not(self, predicate: Predicate, *, named: Named | str | None = None) -> S:
        """The records ``predicate`` rejects (Kafka's ``filterNot``)."""
        return self._then(
            "KSTREAM-FILTER",
            lambda: ops.FilterProcessor(lambda k, v: not predicate(k, v)),
            named=named,
        )

    def flat_map(
        self,
        fn: Callable[[Any, Any], Iterable[tuple[Any, Any]]],
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> S:
        return self._then(
            "KSTREAM-FLATMAP",
            lambda: ops.FlatMapProcessor(fn),
            key_changed=True,
            key_serde=key_serde,
            value_serde=value_serde,
        )

    def flat_map_values(
        self, fn: Callable[[Any], Iterable[Any]], *, value_serde: SerdeLike = None
    ) -> S:
        """Zero or more values per record, each with the record's key (no repartition)."""
        return self._then(
            "KSTREAM-FLATMAPVALUES", lambda: ops.FlatMapValuesProcessor(fn), value_serde=value_serde
        )

    def select_key(
        self, fn: KeyValueMapper, *, key_serde: SerdeLike = None, named: Named | str | None = None
    ) -> S:
        """New key ``fn(key, value)``; a later join or grouping repartitions first."""
        return self._then(
            "KSTREAM-KEY-SELECT",
            lambda: ops.MapProcessor(lambda k, v: (fn(k, v), v)),
            key_changed=True,
            key_serde=key_serde,
            named=named,
        )

    def peek(self, action: Callable[[Any, Any], None], *, named: Named | str | None = None) -> S:
        return self._then("KSTREAM-PEEK", lambda: ops.PeekProcessor(action), named=named)

    def foreach(self, action: Callable[[Any, Any], None]) -> None:
        """Call ``action(key, value)`` for each record; a terminal operation."""
        self._then("KSTREAM-FOREACH", lambda: ops.ForeachProcessor(action))

    def process(
        self,
        supplier: Callable[[], Processor],
        *store_names: str,
        stores: tuple[str, ...] = (),
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> S:
        """Attach a processor-API processor (a fresh one per task from ``supplier``) that may
        use the stores named (Kafka's ``process(supplier, stateStoreNames...)``; registered
        with ``add_state_store``)."""
        stores = (*store_names, *stores)
        name = self.topology.new_name("KSTREAM-PROCESSOR")
        return self._wrap(
            self.node.then(
                name,
                supplier,
                key_changed=True,
                key_serde=opt_serde(key_serde),
                value_serde=opt_serde(value_serde),
                stores=stores,
            )
        )

    def process_values(
        self,
        supplier: Callable[[], Processor],
        *store_names: str,
        stores: tuple[str, ...] = (),
        value_serde: SerdeLike = None,
    ) -> S:
        """Attach a processor that keeps each record's key (Kafka's ``processValues``, KIP-820):
        it must forward the key it was given, so no repartition follows (unlike ``process``)."""
        stores = (*store_names, *stores)
        name = self.topology.new_name("KSTREAM-PROCESSVALUES")
        return self._wrap(
            self.node.then(name, supplier, value_serde=opt_serde(value_serde), stores=stores)
        )

    def split(self, *predicates: Predicate, default: bool = False) -> list[S]:
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
        return [self._wrap(branch.then(child, ops.PassThroughProcessor)) for child in children]

    branch = split

    def merge(self, other: S) -> S:
        topology = self.topology
        name = topology.add_processor(
            topology.new_name("KSTREAM-MERGE"),
            ops.PassThroughProcessor,
            self.node.name,
            other.node.name,
        )
        key_changed = self.node.key_changed or other.node.key_changed
        return self._wrap(
            StreamNode(topology, name, self.node.key_serde, self.node.value_serde, key_changed)
        )

    def repartition(
        self,
        partitions: int | None = None,
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> S:
        """Write to ``<application.id>-<name>-repartition`` (``partitions`` partitions, else
        as many as the input) and read it back: downstream tasks follow the new key."""
        if partitions is not None and partitions < 1:
            raise ConfigError(f"repartition: partitions must be >= 1, got {partitions}")
        stream = self.node.with_serdes(opt_serde(key_serde), opt_serde(value_serde))
        name = name or self.topology.new_name("KSTREAM-REPARTITION")
        return self._wrap(stream.repartition(name, partitions=partitions))

    def to(
        self,
        topic: str,
        produced: Produced | None = None,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> None:
        """Write to ``topic``; ``produced`` carries the serdes too (a keyword wins)."""
        p = produced or Produced()
        key_serde, value_serde = pick(key_serde, p.key_serde), pick(value_serde, p.value_serde)
        stream = self.node.with_serdes(opt_serde(key_serde), opt_serde(value_serde))
        self.topology.add_sink(
            self.topology.new_name("KSTREAM-SINK"),
            topic,
            stream.key_serde,
            stream.value_serde,
            stream.name,
        )
