"""The operations every KStream has that stay streams: stateless operators, branching,
merging, repartitioning and sinks (:class:`StreamOperations`).

The class is generic in the stream type it returns: :class:`~.streams.KStream` subclasses it
and says how to wrap a graph handle (``_wrap``), so these operators build the graph through
:class:`StreamNode` without naming the API classes that refer back to one another (grouping
and joins are in :mod:`.streams`).
"""

from __future__ import annotations

import builtins
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TextIO, TypeVar

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.branched import BranchedKStream
from streamrt.runtime.dsl.options import (
    Produced,
    Repartitioned,
    pick,
    removed_keywords,
    removed_positional,
)
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.graph.topology import StreamPartitioner, TopicNameExtractor, Topology
from streamrt.runtime.graph.windowed_serdes import windowed_partitioner
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors import stateless as ops
from streamrt.serde import Serde, SerdeLike, serde_for

__all__ = ("KeyValueMapper", "Predicate", "StreamOperations", "ValueMapperWithKey", "opt_serde")

S = TypeVar("S", bound="StreamOperations[Any]")

Predicate = Callable[[Any, Any], bool]
KeyValueMapper = Callable[[Any, Any], Any]


@dataclass(frozen=True, slots=True)
class ValueMapperWithKey:
    """A value mapper that also reads the key: ``fn(key, value)``, as Kafka's
    ``ValueMapperWithKey``; ``map_values`` and ``flat_map_values`` take it in place of
    ``fn(value)`` (the key stays, so no repartition follows)."""

    fn: Callable[[Any, Any], Any]


def _java_str(value: Any) -> str:
    """Java's ``String.valueOf`` for what ``print`` shows: null for None."""
    return "null" if value is None else str(value)


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
        name: str | None = None,
        stores: tuple[str, ...] = (),
    ) -> S:
        return self._wrap(
            self.node.then(
                name or self.topology.new_name(prefix),
                processor,
                key_changed=key_changed,
                key_serde=opt_serde(key_serde),
                value_serde=opt_serde(value_serde),
                stores=stores,
            )
        )

    def map(
        self,
        fn: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> S:
        """``name`` names the processor, here and in every other operator (Kafka's
        ``Named.as``)."""
        removed_keywords("map", removed)
        return self._then(
            "KSTREAM-MAP",
            lambda: ops.MapProcessor(fn),
            key_changed=True,
            key_serde=key_serde,
            value_serde=value_serde,
            name=name,
        )

    def map_values(
        self,
        fn: Callable[[Any], Any] | ValueMapperWithKey,
        *,
        value_serde: SerdeLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> S:
        removed_keywords("map_values", removed)
        if isinstance(fn, ValueMapperWithKey):
            keyed = fn.fn
            supplier: Callable[[], Processor] = lambda: ops.MapProcessor(  # noqa: E731
                lambda k, v: (k, keyed(k, v))
            )
        else:
            supplier = lambda: ops.MapValuesProcessor(fn)  # noqa: E731
        return self._then("KSTREAM-MAPVALUES", supplier, value_serde=value_serde, name=name)

    def filter(self, predicate: Predicate, *, name: str | None = None, **removed: Any) -> S:
        removed_keywords("filter", removed)
        return self._then("KSTREAM-FILTER", lambda: ops.FilterProcessor(predicate), name=name)

    def filter_not(self, predicate: Predicate, *, name: str | None = None, **removed: Any) -> S:
        """The records ``predicate`` rejects (Kafka's ``filterNot``)."""
        removed_keywords("filter_not", removed)
        return self._then(
            "KSTREAM-FILTER",
            lambda: ops.FilterProcessor(lambda k, v: not predicate(k, v)),
            name=name,
        )

    def flat_map(
        self,
        fn: Callable[[Any, Any], Iterable[tuple[Any, Any]]],
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> S:
        return self._then(
            "KSTREAM-FLATMAP",
            lambda: ops.FlatMapProcessor(fn),
            key_changed=True,
            key_serde=key_serde,
            value_serde=value_serde,
            name=name,
        )

    def flat_map_values(
        self,
        fn: Callable[[Any], Iterable[Any]] | ValueMapperWithKey,
        *,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> S:
        """Zero or more values per record, each with the record's key (no repartition)."""
        if isinstance(fn, ValueMapperWithKey):
            keyed = fn.fn
            supplier: Callable[[], Processor] = lambda: ops.FlatMapProcessor(  # noqa: E731
                lambda k, v: [(k, x) for x in keyed(k, v)]
            )
        else:
            supplier = lambda: ops.FlatMapValuesProcessor(fn)  # noqa: E731
        return self._then("KSTREAM-FLATMAPVALUES", supplier, value_serde=value_serde, name=name)

    def select_key(
        self,
        fn: KeyValueMapper,
        *,
        key_serde: SerdeLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> S:
        """New key ``fn(key, value)``; a later join or grouping repartitions first."""
        removed_keywords("select_key", removed)
        return self._then(
            "KSTREAM-KEY-SELECT",
            lambda: ops.MapProcessor(lambda k, v: (fn(k, v), v)),
            key_changed=True,
            key_serde=key_serde,
            name=name,
        )

    def peek(
        self, action: Callable[[Any, Any], None], *, name: str | None = None, **removed: Any
    ) -> S:
        removed_keywords("peek", removed)
        return self._then("KSTREAM-PEEK", lambda: ops.PeekProcessor(action), name=name)

    def foreach(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record; a terminal operation."""
        self._then("KSTREAM-FOREACH", lambda: ops.ForeachProcessor(action), name=name)

    def print(
        self,
        *,
        label: str | None = None,
        mapper: Callable[[Any, Any], str] | None = None,
        file: TextIO | None = None,
        name: str | None = None,
    ) -> None:
        """Print each record as ``[label]: key, value`` (or ``mapper(key, value)``) to
        ``file`` (default: stdout), Kafka's ``print(Printed.toSysOut().withLabel(...))``; a
        terminal operation, for debugging. As Kafka's: the label defaults to the name of the
        node printed (e.g. ``KSTREAM-SOURCE-0000000000``; ``name`` names the printer), and
        the default line prints a missing key or value as ``null``."""
        tag = label if label is not None else self.node.name
        show = mapper or (lambda k, v: f"{_java_str(k)}, {_java_str(v)}")

        def out(key: Any, value: Any) -> None:
            builtins.print(f"[{tag}]: {show(key, value)}", file=file or sys.stdout, flush=True)

        self._then("KSTREAM-PRINTER", lambda: ops.ForeachProcessor(out), name=name)

    def process(
        self,
        supplier: Callable[[], Processor],
        *store_names: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> S:
        """Attach a processor-API processor (a fresh one per task from ``supplier``) that may
        use the stores named (Kafka's ``process(supplier, stateStoreNames...)``; registered
        with ``add_state_store``)."""
        removed_keywords("process", removed)
        return self._then(
            "KSTREAM-PROCESSOR",
            supplier,
            key_changed=True,
            key_serde=key_serde,
            value_serde=value_serde,
            name=name,
            stores=store_names,
        )

    def process_values(
        self,
        supplier: Callable[[], Processor],
        *store_names: str,
        value_serde: SerdeLike = None,
        name: str | None = None,
        **removed: Any,
    ) -> S:
        """Attach a processor that keeps each record's key (Kafka's ``processValues``, KIP-820):
        it must forward the key it was given, so no repartition follows (unlike ``process``)."""
        removed_keywords("process_values", removed)
        return self._then(
            "KSTREAM-PROCESSVALUES",
            supplier,
            value_serde=value_serde,
            name=name,
            stores=store_names,
        )

    def split(
        self, *removed: Any, name: str | None = None, **removed_kw: Any
    ) -> BranchedKStream[S]:
        """Branch the stream (Kafka's ``split``): ``.branch(predicate, Branched.as_("x"))``
        for each branch, then ``.default_branch()`` or ``.no_default_branch()`` gives the
        branches by name (``name`` + the branch's name); see :mod:`.branched`."""
        removed_positional(
            "split", removed, "split().branch(predicate)... .default_branch()/no_default_branch()"
        )
        removed_keywords("split", removed_kw)
        split_name = name or self.topology.new_name("KSTREAM-BRANCH")
        return BranchedKStream(self.node, split_name, self._wrap)

    def merge(self, other: S, *, name: str | None = None, **removed: Any) -> S:
        """The records of both streams, as they arrive (Kafka's ``merge``)."""
        removed_keywords("merge", removed)
        topology = self.topology
        merged = topology.add_processor(
            name or topology.new_name("KSTREAM-MERGE"),
            ops.PassThroughProcessor,
            self.node.name,
            other.node.name,
        )
        key_changed = self.node.key_changed or other.node.key_changed
        return self._wrap(
            StreamNode(topology, merged, self.node.key_serde, self.node.value_serde, key_changed)
        )

    def repartition(
        self,
        repartitioned: Repartitioned | None = None,
        *,
        partitions: int | None = None,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        partitioner: StreamPartitioner | None = None,
    ) -> S:
        """Write to ``<application.id>-<name>-repartition`` (``partitions`` partitions, else
        as many as the input) and read it back: downstream tasks follow the new key, or the
        partitions ``partitioner`` picks (as ``to``'s). ``repartitioned`` carries the same as
        the keywords (a keyword wins)."""
        given: object = repartitioned  # the old spelling passed the partition count here
        if not isinstance(given, Repartitioned | None):
            raise TypeError(
                f"repartition() takes a Repartitioned or partitions=, got {repartitioned!r}"
            )
        r = repartitioned or Repartitioned()
        partitions, name = pick(partitions, r.partitions), pick(name, r.name)
        if partitions is not None and partitions < 1:
            raise ConfigError(f"repartition: partitions must be >= 1, got {partitions}")
        key_serde, value_serde = pick(key_serde, r.key_serde), pick(value_serde, r.value_serde)
        stream = self.node.with_serdes(opt_serde(key_serde), opt_serde(value_serde))
        name = name or self.topology.new_name("KSTREAM-REPARTITION")
        partitioner = pick(partitioner, r.partitioner)
        return self._wrap(stream.repartition(name, partitions=partitions, partitioner=partitioner))

    def to(
        self,
        topic: str | TopicNameExtractor,
        produced: Produced | None = None,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> None:
        """Write to ``topic``, or to the topic ``topic(key, value, record_context)`` names for
        each record (Kafka's ``TopicNameExtractor``; those topics must exist), in the
        partitions ``partitioner(topic, key, value, num_partitions)`` picks (Kafka's
        ``StreamPartitioner``: None for the default, a set of partitions, an empty set to
        drop the record; no partitioner: by key, a windowed key by its inner key as Kafka's
        ``WindowedStreamPartitioner``). ``produced`` carries the serdes, sink name and
        partitioner too (a keyword wins)."""
        p = produced or Produced()
        key_serde, value_serde = pick(key_serde, p.key_serde), pick(value_serde, p.value_serde)
        stream = self.node.with_serdes(opt_serde(key_serde), opt_serde(value_serde))
        if isinstance(topic, str):
            fixed, extractor = topic, None
        elif callable(topic):
            fixed, extractor = "", topic
        else:
            raise ConfigError(f"to() needs a topic name or a topic extractor, got {topic!r}")
        self.topology.add_sink(
            pick(name, p.name) or self.topology.new_name("KSTREAM-SINK"),
            fixed,
            stream.key_serde,
            stream.value_serde,
            stream.name,
            topic_extractor=extractor,
            partitioner=pick(partitioner, p.partitioner) or windowed_partitioner(stream.key_serde),
        )
