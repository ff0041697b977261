"""Topology: the processor graph and how it splits into sub-topologies (pure logic).

A sub-topology is a connected part of the graph; repartition topics cut the graph, since
their sink and their source are different nodes. Each sub-topology gets one task per input
partition, named ``<subtopology>_<partition>`` as in Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.graph.global_tables import GlobalTableSpec
from streamrt.runtime.processor import Processor
from streamrt.runtime.store_builders import StoreBuilder, store_spec
from streamrt.runtime.stores import StoreSpec
from streamrt.serde import Serde, bind_serde

__all__ = (
    "REPARTITION_SUFFIX",
    "ProcessorNode",
    "SinkNode",
    "SourceNode",
    "StreamPartitioner",
    "SubTopology",
    "TopicNameExtractor",
    "Topology",
    "changelog_topic",
    "internal_topic",
)

REPARTITION_SUFFIX = "-repartition"

# (key, value, record_context) -> the topic a sink writes the record to
TopicNameExtractor = Callable[[Any, Any, Any], str]
# (topic, key, value, partition count) -> None (default partitioning) or the partitions to
# send the record to (Kafka's StreamPartitioner.partitions, KIP-837; empty: drop it)
StreamPartitioner = Callable[[str, Any, Any, int], Any]


def internal_topic(application_id: str, name: str) -> str:
    """``<application.id>-<name>``: internal topic names are scoped by the application."""
    return f"{application_id}-{name}"


def changelog_topic(application_id: str, store: str) -> str:
    return f"{application_id}-{store}-changelog"


@dataclass(slots=True)
class SourceNode:
    name: str
    topic: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    internal: bool = False  # a repartition topic: named relative to application.id
    children: list[str] = field(default_factory=list)
    # fn(record) -> ms (see runtime.timestamps); None: the default.timestamp.extractor config
    timestamp_extractor: Callable[[Any], int] | None = None
    partitions: int | None = None  # an explicit repartition(n) topic's partition count

    def __post_init__(self) -> None:  # a registry serde learns its topic (its subject)
        self.key_serde = bind_serde(self.key_serde, self.topic, is_key=True)
        self.value_serde = bind_serde(self.value_serde, self.topic, is_key=False)


@dataclass(slots=True)
class ProcessorNode:
    name: str
    supplier: Callable[[], Processor]
    parents: list[str]
    stores: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    accepts_changes: bool = False  # gets table Change(new, old) values, not just new ones


@dataclass(slots=True)
class SinkNode:
    name: str
    topic: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    parents: list[str]
    internal: bool = False
    children: list[str] = field(default_factory=list)
    accepts_changes: bool = False  # writes Change values (a KTable.group_by repartition)
    # fn(key, value, record_context) -> topic per record (Kafka's TopicNameExtractor); then
    # ``topic`` only names the sink in describe()
    topic_extractor: TopicNameExtractor | None = None
    partitioner: StreamPartitioner | None = None  # None: by key (the producer's murmur2)

    def __post_init__(self) -> None:  # a registry serde learns its topic (its subject)
        if self.topic_extractor is None:
            self.key_serde = bind_serde(self.key_serde, self.topic, is_key=True)
            self.value_serde = bind_serde(self.value_serde, self.topic, is_key=False)


Node = SourceNode | ProcessorNode | SinkNode


@dataclass(frozen=True, slots=True)
class SubTopology:
    id: int
    nodes: tuple[str, ...]
    source_topics: tuple[str, ...]  # resolved names
    stores: tuple[str, ...]


class Topology:
    """The graph built by the DSL or by hand with the processor API."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.stores: dict[str, StoreSpec] = {}
        # joins: sets of source node names whose topics must be co-partitioned (checked at start)
        self.copartition_groups: list[frozenset[str]] = []
        # global tables by store name: not in any task (see graph.global_tables)
        self.global_tables: dict[str, GlobalTableSpec] = {}
        # table nodes asked to send old values (Kafka's enableSendingOldValues), and the nodes
        # that pass such a request on to their parents (unmaterialized filter/map_values, joins)
        self.old_values: set[str] = set()
        self.old_value_parents: dict[str, tuple[str, ...]] = {}
        # what a node must add when first asked for old values (e.g. a store to read them from)
        self.old_value_hooks: dict[str, Callable[[], None]] = {}
        self._counter = 0

    def new_name(self, prefix: str) -> str:
        """Kafka Streams-style generated names: ``KSTREAM-MAP-0000000003``."""
        name = f"{prefix}-{self._counter:010d}"
        self._counter += 1
        return name

    def add_source(
        self,
        name: str,
        topic: str,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        *,
        internal: bool = False,
        timestamp_extractor: Callable[[Any], int] | None = None,
        partitions: int | None = None,
    ) -> str:
        for node in self.nodes.values():
            if isinstance(node, SourceNode) and node.topic == topic and node.internal == internal:
                raise ConfigError(f"topic {topic!r} is already a source of this topology")
        if not internal and any(g.topic == topic for g in self.global_tables.values()):
            raise ConfigError(f"topic {topic!r} is already the source of a global table")
        self._add(
            SourceNode(
                name,
                topic,
                key_serde,
                value_serde,
                internal,
                timestamp_extractor=timestamp_extractor,
                partitions=partitions,
            )
        )
        return name

    def request_old_values(self, node: str) -> None:
        """A downstream operator needs ``node``'s old values (a grouping, a suppress, a left or
        outer table join); the request travels up through the nodes that pass it on."""
        todo = [node]
        while todo:
            name = todo.pop()
            if name not in self.old_values:
                self.old_values.add(name)
                todo.extend(self.old_value_parents.get(name, ()))
                hook = self.old_value_hooks.pop(name, None)
                if hook is not None:
                    hook()

    def sends_old_values(self, node: str) -> bool:
        """Whether ``node`` was asked for old values (read when its processor is built)."""
        return node in self.old_values

    def add_processor(
        self,
        name: str,
        supplier: Callable[[], Processor],
        *parents: str,
        stores: tuple[str, ...] = (),
        accepts_changes: bool = False,
    ) -> str:
        for store in stores:
            if store not in self.stores:
                raise ConfigError(f"processor {name} uses unknown store {store!r}")
        self._add(
            ProcessorNode(
                name, supplier, list(parents), list(stores), accepts_changes=accepts_changes
            )
        )
        return name

    def add_sink(
        self,
        name: str,
        topic: str,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        *parents: str,
        internal: bool = False,
        accepts_changes: bool = False,
        topic_extractor: TopicNameExtractor | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> str:
        """A sink writing to ``topic``, or to ``topic_extractor(key, value, record_context)``
        per record (Kafka's ``TopicNameExtractor``; the topics must exist), in the partitions
        ``partitioner`` picks (see :mod:`streamrt.runtime.engine.tasks.sink_writer`)."""
        self._add(
            SinkNode(
                name,
                topic,
                key_serde,
                value_serde,
                list(parents),
                internal,
                accepts_changes=accepts_changes,
                topic_extractor=topic_extractor,
                partitioner=partitioner,
            )
        )
        return name

    def add_global_table(self, spec: GlobalTableSpec) -> None:
        """Register a global table; its store name and topic must be new to the topology."""
        if spec.name in self.global_tables or spec.name in self.stores:
            raise ConfigError(f"state store {spec.name!r} is defined twice")
        for node in self.nodes.values():
            if isinstance(node, SourceNode) and not node.internal and node.topic == spec.topic:
                raise ConfigError(f"topic {spec.topic!r} is already a source of this topology")
        self.global_tables[spec.name] = spec

    def add_copartition_group(self, *nodes: str) -> None:
        """The sources feeding ``nodes`` must be co-partitioned (a join's inputs; checked at
        start by :mod:`streamrt.runtime.graph.copartition`)."""
        group = frozenset().union(*(self.source_ancestors(n) for n in nodes))
        if len(group) > 1:
            self.copartition_groups.append(group)

    def add_store(self, spec: StoreSpec) -> None:
        if spec.name in self.stores:
            raise ConfigError(f"state store {spec.name!r} is defined twice")
        self.stores[spec.name] = spec

    def add_state_store(self, builder: StoreBuilder | StoreSpec, *processor_names: str) -> None:
        """Kafka's ``Topology.addStateStore(builder, processorNames...)``: register the store
        (``Stores.*_builder(...)``) and connect it to the named processors."""
        spec = store_spec(builder)
        for name in processor_names:  # all checked before anything changes
            self._processor(name)
        self.add_store(spec)
        self.connect_processor_and_state_stores(*processor_names, stores=(spec.name,))

    def connect_processor_and_state_stores(
        self, *processor_names: str, stores: tuple[str, ...]
    ) -> None:
        """Let already-added processors read and write already-registered ``stores``."""
        for store in stores:
            if store not in self.stores:
                raise ConfigError(f"unknown state store {store!r}: add it with add_state_store")
        for name in processor_names:
            node = self._processor(name)
            node.stores.extend(s for s in stores if s not in node.stores)

    def _processor(self, name: str) -> ProcessorNode:
        node = self.nodes.get(name)
        if not isinstance(node, ProcessorNode):
            raise ConfigError(f"no processor named {name!r} in this topology")
        return node

    def _add(self, node: Node) -> None:
        if node.name in self.nodes:
            raise ConfigError(f"topology node {node.name!r} is defined twice")
        for parent in getattr(node, "parents", ()):
            if parent not in self.nodes:
                raise ConfigError(f"node {node.name}: unknown parent {parent!r}")
            self.nodes[parent].children.append(node.name)
        self.nodes[node.name] = node

    def source_ancestors(self, node_name: str) -> frozenset[str]:
        """The source nodes that feed ``node_name`` (joins use them as a co-partition group)."""
        seen: set[str] = set()
        todo, sources = [node_name], set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            node = self.nodes[name]
            if isinstance(node, SourceNode):
                sources.add(name)
            else:
                todo.extend(node.parents)
        return frozenset(sources)

    def topic_of(self, node: SourceNode | SinkNode, application_id: str) -> str:
        return internal_topic(application_id, node.topic) if node.internal else node.topic

    def sink_target(self, node: SinkNode, application_id: str) -> str | TopicNameExtractor:
        """Where ``node`` writes a record: its one topic, or its topic extractor, checked."""
        extractor = node.topic_extractor
        if extractor is None:
            return self.topic_of(node, application_id)

        def checked(key: Any, value: Any, context: Any) -> str:
            topic = extractor(key, value, context)
            if not isinstance(topic, str) or not topic:
                raise ConfigError(
                    f"the topic extractor of sink {node.name} returned {topic!r}, not a topic name"
                )
            return topic

        return checked

    def subtopologies(self, application_id: str) -> list[SubTopology]:
        """Connected components, numbered in the order their first node was added."""
        parent: dict[str, str] = {name: name for name in self.nodes}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            parent[find(a)] = find(b)

        store_owner: dict[str, str] = {}
        for node in self.nodes.values():
            for p in getattr(node, "parents", ()):
                union(node.name, p)
            if isinstance(node, ProcessorNode):
                for store in node.stores:
                    if store in store_owner:
                        union(node.name, store_owner[store])
                    store_owner[store] = node.name
        groups: dict[str, list[str]] = {}
        for name in self.nodes:  # dict order = insertion order
            groups.setdefault(find(name), []).append(name)
        result = []
        for index, members in enumerate(groups.values()):
            topics = tuple(
                self.topic_of(n, application_id)
                for n in (self.nodes[m] for m in members)
                if isinstance(n, SourceNode)
            )
            stores = tuple(
                dict.fromkeys(
                    s
                    for m in members
                    if isinstance(self.nodes[m], ProcessorNode)
                    for s in self.nodes[m].stores  # type: ignore[union-attr]
                )
            )
            result.append(SubTopology(index, tuple(members), topics, stores))
        return result

    def repartition_topics(self, application_id: str) -> list[str]:
        return [
            internal_topic(application_id, n.topic)
            for n in self.nodes.values()
            if isinstance(n, SourceNode) and n.internal
        ]

    def source_topics(self, application_id: str) -> list[str]:
        return [
            self.topic_of(n, application_id)
            for n in self.nodes.values()
            if isinstance(n, SourceNode)
        ]

    def describe(self, application_id: str) -> str:
        """A text picture of the graph, like ``Topology#describe()``."""
        lines = []
        for sub in self.subtopologies(application_id):
            lines.append(f"Sub-topology: {sub.id} (topics {', '.join(sub.source_topics)})")
            for name in sub.nodes:
                node = self.nodes[name]
                kind = type(node).__name__.removesuffix("Node")
                lines.append(f"  {kind}: {name} --> {', '.join(node.children) or 'none'}")
        return "\n".join(lines)
