"""A streams group's topology as the broker keeps it: frozen values, free of the wire classes.

Mirrors the ``Topology`` field of StreamsGroupHeartbeat v0 (KIP-1071) so the coordinator,
the topic checks (``configured_topology``) and the task assignor (``task_assignor``) share one
immutable shape; ``from_request`` converts kio's request object once, at the edge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kio.schema.streams_group_heartbeat.v0 import request as wire

__all__ = (
    "CopartitionGroup",
    "StreamsTopology",
    "Subtopology",
    "TaskIds",
    "TopicInfo",
    "from_request",
)

#: subtopology id -> partitions (task ids) of that subtopology
TaskIds = Mapping[str, frozenset[int]]


@dataclasses.dataclass(frozen=True, slots=True)
class TopicInfo:
    """An internal topic the application declares: ``partitions`` and ``replication_factor``
    are 0 when the broker is to choose (changelogs always send 0 partitions)."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Topics that must have equal partition counts, as indexes into the owning subtopology's
    ``source_topics``, ``source_topic_regex`` and ``repartition_source_topics`` (as on the wire)."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Subtopology:
    """One independently runnable piece of the topology; its tasks are numbered by partition."""

    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    @property
    def is_stateful(self) -> bool:
        """Stateful subtopologies (with changelogs) are the ones that get standby tasks."""
        return bool(self.state_changelog_topics)

    def copartitioned_topic_names(self, group: CopartitionGroup) -> frozenset[str]:
        """The topic names a copartition group's indexes point at (regexes are not topics)."""
        names = {self.source_topics[i] for i in group.source_topics}
        names |= {self.repartition_source_topics[i].name for i in group.repartition_source_topics}
        return frozenset(names)


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsTopology:
    """The whole topology; ``epoch`` lets members detect that the group runs another one."""

    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()

    def subtopology(self, subtopology_id: str) -> Subtopology | None:
        """The subtopology with this id, or None."""
        for sub in self.subtopologies:
            if sub.subtopology_id == subtopology_id:
                return sub
        return None


def _topic_info(info: wire.TopicInfo) -> TopicInfo:
    return TopicInfo(
        name=str(info.name),
        partitions=int(info.partitions),
        replication_factor=int(info.replication_factor),
        configs=tuple((kv.key, kv.value) for kv in info.topic_configs),
    )


def _subtopology(sub: wire.Subtopology) -> Subtopology:
    return Subtopology(
        subtopology_id=sub.subtopology_id,
        source_topics=tuple(str(t) for t in sub.source_topics),
        source_topic_regex=tuple(sub.source_topic_regex),
        state_changelog_topics=tuple(_topic_info(t) for t in sub.state_changelog_topics),
        repartition_sink_topics=tuple(str(t) for t in sub.repartition_sink_topics),
        repartition_source_topics=tuple(_topic_info(t) for t in sub.repartition_source_topics),
        copartition_groups=tuple(
            CopartitionGroup(
                source_topics=tuple(int(i) for i in g.source_topics),
                source_topic_regex=tuple(int(i) for i in g.source_topic_regex),
                repartition_source_topics=tuple(int(i) for i in g.repartition_source_topics),
            )
            for g in sub.copartition_groups
        ),
    )


def from_request(topology: wire.Topology) -> StreamsTopology:
    """Convert the heartbeat's kio ``Topology`` into the broker's frozen form."""
    return StreamsTopology(
        epoch=int(topology.epoch),
        subtopologies=tuple(_subtopology(s) for s in topology.subtopologies),
    )
