"""Check a streams group's topology against the cluster's topics and size its internal topics.

Kafka's ``InternalTopicManager.configureTopics`` (with ``RepartitionTopics``,
``CopartitionedTopicsEnforcer`` and ``ChangelogTopics``) as one pure function: the coordinator
passes the topology and a ``partition_count(topic)`` lookup and gets back the number of tasks of
each subtopology, every internal topic with its partition count and configs, the ones still to
create, and the heartbeat status to report when the topology cannot run yet. Problems the
application must fix in its code (a repartition loop, bad copartition indexes, source topic
regexes, which are not supported yet) raise ``InvalidTopologyError``, the heartbeat's
STREAMS_INVALID_TOPOLOGY error.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Collection, Iterable, Mapping

from streamrt.broker.streams_group.topology import StreamsTopology, Subtopology, TopicInfo

__all__ = (
    "ConfiguredTopology",
    "InternalTopic",
    "InvalidTopologyError",
    "PartitionCount",
    "TopologyStatus",
    "configure_topics",
    "summarize_topics",
    "validate_topology",
)

#: topic name -> its partition count, or None when the topic does not exist
PartitionCount = Callable[[str], int | None]

#: topic configs the broker adds unless the topology sets them (Kafka Streams' own defaults)
CHANGELOG_DEFAULTS: Mapping[str, str] = {"cleanup.policy": "compact"}
REPARTITION_DEFAULTS: Mapping[str, str] = {"cleanup.policy": "delete"}


class TopologyStatus(enum.IntEnum):
    """StreamsGroupHeartbeatResponse ``Status.StatusCode`` values (KIP-1071)."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4


class InvalidTopologyError(ValueError):
    """The topology itself is wrong (answered with the STREAMS_INVALID_TOPOLOGY error code)."""


class _TopicConfigurationError(Exception):
    """The topology is fine but the topics are not: becomes a status, not an error."""

    def __init__(self, status: TopologyStatus, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclasses.dataclass(frozen=True, slots=True)
class InternalTopic:
    """An internal topic as CreateTopics would make it; replication factor -1 means the
    broker's ``default.replication.factor``."""

    name: str
    partitions: int
    replication_factor: int = -1
    configs: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """The outcome of ``configure_topics``; also the assignor's ``TopologyDescriber``.

    ``subtopology_tasks`` is empty when a source topic is missing or topics are incorrectly
    partitioned (nothing can be sized); with MISSING_INTERNAL_TOPICS it is filled but the
    topology is not ``ready`` until ``topics_to_create`` exist.
    """

    epoch: int
    subtopology_tasks: Mapping[str, int] = dataclasses.field(default_factory=dict)
    stateful_subtopologies: frozenset[str] = frozenset()
    internal_topics: tuple[InternalTopic, ...] = ()
    topics_to_create: tuple[InternalTopic, ...] = ()
    status: TopologyStatus | None = None
    status_detail: str = ""

    @property
    def ready(self) -> bool:
        """True when every topic exists with the right partition count: tasks may be assigned."""
        return self.status is None

    def subtopologies(self) -> list[str]:
        """Subtopology ids, sorted (the assignor relies on a stable order)."""
        return sorted(self.subtopology_tasks)

    def max_num_input_partitions(self, subtopology_id: str) -> int:
        """Number of tasks of the subtopology: its largest input topic's partition count."""
        return self.subtopology_tasks[subtopology_id]

    def is_stateful(self, subtopology_id: str) -> bool:
        """Whether the subtopology has state stores (changelogs), so it gets standby tasks."""
        return subtopology_id in self.stateful_subtopologies


def summarize_topics(topics: Iterable[str]) -> str:
    """Kafka's short topic list for status details: at most three names, then a count."""
    names = sorted(topics)
    if not names:
        return "<none>"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def _java_map(counts: Mapping[str, int]) -> str:
    """A sorted map printed as Java's TreeMap does, as Kafka's detail strings show it."""
    return "{" + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)) + "}"


def validate_topology(topology: StreamsTopology) -> None:
    """Raise ``InvalidTopologyError`` for a topology no topic layout could make runnable."""
    seen: set[str] = set()
    for sub in topology.subtopologies:
        if sub.subtopology_id in seen:
            raise InvalidTopologyError(f"Duplicate subtopology id {sub.subtopology_id!r}.")
        seen.add(sub.subtopology_id)
        if sub.source_topic_regex:
            raise InvalidTopologyError(
                f"Subtopology {sub.subtopology_id}: regular expressions for source topics "
                "are not supported yet."
            )
        if not sub.source_topics and not sub.repartition_source_topics:
            raise InvalidTopologyError(f"Subtopology {sub.subtopology_id} has no source topics.")
        for info in (*sub.repartition_source_topics, *sub.state_changelog_topics):
            if info.partitions < 0 or info.replication_factor < 0:
                raise InvalidTopologyError(
                    f"Internal topic {info.name} of subtopology {sub.subtopology_id} has a "
                    f"negative partition count or replication factor "
                    f"({info.partitions}, {info.replication_factor})."
                )
        for group in sub.copartition_groups:
            for indexes, size, what in (
                (group.source_topics, len(sub.source_topics), "source topic"),
                (
                    group.repartition_source_topics,
                    len(sub.repartition_source_topics),
                    "repartition source topic",
                ),
                (group.source_topic_regex, len(sub.source_topic_regex), "source regex"),
            ):
                bad = [i for i in indexes if not 0 <= i < size]
                if bad:
                    raise InvalidTopologyError(
                        f"Copartition group of subtopology {sub.subtopology_id} has {what} "
                        f"index {bad[0]} outside 0..{size - 1}."
                    )


def _missing_source_topics(topology: StreamsTopology, partition_count: PartitionCount) -> None:
    missing = {
        t for sub in topology.subtopologies for t in sub.source_topics if partition_count(t) is None
    }
    if missing:
        raise _TopicConfigurationError(
            TopologyStatus.MISSING_SOURCE_TOPICS,
            f"Source topics {summarize_topics(missing)} are missing.",
        )


def _upstream_count(
    sub: Subtopology, decided: Mapping[str, int], partition_count: PartitionCount
) -> int | None:
    """The largest known input of a subtopology: what its repartition sinks are sized to."""
    candidates = [decided[t.name] for t in sub.repartition_source_topics if t.name in decided]
    candidates += [n for t in sub.source_topics if (n := partition_count(t)) is not None]
    return max(candidates, default=None)


def _repartition_counts(
    topology: StreamsTopology, partition_count: PartitionCount
) -> dict[str, int]:
    """Size repartition topics: an explicit count, else the max input of the subtopologies
    writing to them, iterated to a fixpoint (a repartition topic may feed another)."""
    decided = {
        t.name: t.partitions
        for sub in topology.subtopologies
        for t in sub.repartition_source_topics
        if t.partitions != 0
    }
    while True:
        needed = progress = False
        for sub in topology.subtopologies:
            for sink in sub.repartition_sink_topics:
                if sink in decided:
                    continue
                count = _upstream_count(sub, decided, partition_count)
                if count is None:
                    needed = True
                else:
                    decided[sink] = count
                    progress = True
        if not needed:
            break
        if not progress:
            raise InvalidTopologyError(
                "Failed to compute number of partitions for all repartition topics. "
                "There may be loops in the topology that cannot be resolved."
            )
    for sub in topology.subtopologies:
        if any(t.name not in decided for t in sub.repartition_source_topics):
            raise InvalidTopologyError(
                "Failed to compute number of partitions for all repartition topics, because "
                "a repartition source topic is never used as a sink topic."
            )
    return decided


def _enforce_group(
    topics: Collection[str],
    fixed: Collection[str],
    flexible: Collection[str],
    count: Callable[[str], int],
) -> dict[str, int]:
    """One copartition group: external topics must agree; flexible repartition topics take
    their count (or the largest repartition count when the group has no external topic)."""
    repartition = {t: count(t) for t in topics if t in fixed or t in flexible}
    external = {t: count(t) for t in topics if t not in repartition}
    fixed_here = {t: n for t, n in repartition.items() if t in fixed}
    if external:
        if len(set(external.values())) > 1:
            raise _TopicConfigurationError(
                TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                "Following topics do not have the same number of partitions: "
                f"[{_java_map(external)}]",
            )
        target = next(iter(external.values()))
    elif fixed_here:
        if len(set(fixed_here.values())) > 1:
            raise _TopicConfigurationError(
                TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                "Following topics do not have the same number of partitions: "
                f"[{_java_map(repartition)}]",
            )
        target = next(iter(fixed_here.values()))
    else:
        target = max(repartition.values(), default=0)
        if target == 0:
            raise InvalidTopologyError(
                "All topics in the copartition group had undefined partition number: "
                + ", ".join(sorted(repartition))
            )
    for topic, n in sorted(fixed_here.items()):
        if n != target:
            raise _TopicConfigurationError(
                TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{n}] of repartition topic [{topic}] doesn't match "
                f"number of partitions [{target}] of the source topic.",
            )
    return dict.fromkeys(repartition, target)


def _enforce_copartitioning(
    topology: StreamsTopology, decided: dict[str, int], partition_count: PartitionCount
) -> None:
    subs = topology.subtopologies
    fixed = {t.name for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    flexible = {t.name for s in subs for t in s.repartition_source_topics if t.partitions == 0}

    def count(topic: str) -> int:
        # An existing topic's real count wins, as in Kafka; a wrong one is reported later.
        found = partition_count(topic)
        return found if found is not None else decided[topic]

    for sub in subs:
        for group in sub.copartition_groups:
            topics = sub.copartitioned_topic_names(group)
            if topics:
                decided.update(_enforce_group(topics, fixed, flexible, count))


def _internal_topic(info: TopicInfo, partitions: int, defaults: Mapping[str, str]) -> InternalTopic:
    configs = dict(defaults) | dict(info.configs)
    return InternalTopic(
        name=info.name,
        partitions=info.partitions or partitions,
        replication_factor=info.replication_factor or -1,
        configs=tuple(sorted(configs.items())),
    )


def _size(
    topology: StreamsTopology, decided: Mapping[str, int], partition_count: PartitionCount
) -> tuple[dict[str, int], dict[str, InternalTopic]]:
    """Tasks per subtopology and every internal topic, sized from the decided counts."""

    def count(topic: str) -> int:
        found = partition_count(topic)
        return found if found is not None else decided[topic]

    tasks: dict[str, int] = {}
    internal: dict[str, InternalTopic] = {}
    for sub in topology.subtopologies:
        inputs = [*sub.source_topics, *(t.name for t in sub.repartition_source_topics)]
        tasks[sub.subtopology_id] = max(count(t) for t in inputs)
        for info in sub.repartition_source_topics:
            internal[info.name] = _internal_topic(info, decided[info.name], REPARTITION_DEFAULTS)
        for info in sub.state_changelog_topics:
            if info.name not in sub.source_topics:  # a source table reuses its input topic
                num_tasks = tasks[sub.subtopology_id]
                internal[info.name] = _internal_topic(info, num_tasks, CHANGELOG_DEFAULTS)
    return tasks, internal


def _topics_to_create(
    internal: Mapping[str, InternalTopic], partition_count: PartitionCount
) -> list[InternalTopic]:
    missing = []
    for name in sorted(internal):
        expected = internal[name].partitions
        found = partition_count(name)
        if found is None:
            missing.append(internal[name])
        elif found != expected:
            raise _TopicConfigurationError(
                TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {name} has different number of partitions: "
                f"expected {expected}, found {found}",
            )
    return missing


def configure_topics(
    topology: StreamsTopology, partition_count: PartitionCount
) -> ConfiguredTopology:
    """Size every internal topic of ``topology`` and say whether it can run on these topics.

    Order as in Kafka: missing source topics first, then repartition counts, copartitioning,
    changelog sizes, and last the internal topics that do not exist yet or have the wrong count.
    Raises ``InvalidTopologyError`` for a topology that is wrong in itself.
    """
    validate_topology(topology)
    stateful = frozenset(s.subtopology_id for s in topology.subtopologies if s.is_stateful)
    try:
        _missing_source_topics(topology, partition_count)
        decided = _repartition_counts(topology, partition_count)
        _enforce_copartitioning(topology, decided, partition_count)
        tasks, internal = _size(topology, decided, partition_count)
        to_create = _topics_to_create(internal, partition_count)
    except _TopicConfigurationError as e:
        return ConfiguredTopology(topology.epoch, status=e.status, status_detail=e.detail)
    result = ConfiguredTopology(
        topology.epoch,
        subtopology_tasks=tasks,
        stateful_subtopologies=stateful,
        internal_topics=tuple(internal[n] for n in sorted(internal)),
        topics_to_create=tuple(to_create),
    )
    if to_create:
        detail = "Internal topics are missing: " + summarize_topics(t.name for t in to_create)
        return dataclasses.replace(
            result, status=TopologyStatus.MISSING_INTERNAL_TOPICS, status_detail=detail
        )
    return result
