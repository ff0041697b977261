"""What a KIP-1071 streams-group member says and hears: topology, tasks, statuses, endpoints.

Plain frozen values with their wire form (kio's StreamsGroupHeartbeat v0 field names), so the
member's loop (:mod:`streamrt.membership.streams_member`) deals in tasks, not request dicts.
A task is ``(subtopology id, partition)``; its name ``<subtopology>_<partition>`` is the one
the classic protocol gives it, so state directories and changelogs are the same under both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = (
    "STATUS_NAMES",
    "EndpointPartitions",
    "StreamsIdentity",
    "StreamsSubtopology",
    "StreamsTasks",
    "StreamsTopology",
    "TopicInfo",
    "task_names",
)

TaskIds = Mapping[str, frozenset[int]]

#: StreamsGroupHeartbeatResponse status codes (Kafka 4.3's ``Status``).
STATUS_NAMES: Mapping[int, str] = {
    0: "STALE_TOPOLOGY",
    1: "MISSING_SOURCE_TOPICS",
    2: "INCORRECTLY_PARTITIONED_TOPICS",
    3: "MISSING_INTERNAL_TOPICS",
    4: "SHUTDOWN_APPLICATION",
}
SHUTDOWN_APPLICATION = 4


def task_names(tasks: TaskIds) -> tuple[str, ...]:
    """``{"0": {1, 0}}`` → ``("0_0", "0_1")``, sorted by subtopology then partition."""
    return tuple(f"{sub}_{p}" for sub in sorted(tasks, key=_sub_key) for p in sorted(tasks[sub]))


def _sub_key(sub: str) -> tuple[int, str]:
    return (int(sub), sub) if sub.isdigit() else (1 << 30, sub)


def _wire_tasks(tasks: TaskIds) -> list[dict[str, Any]]:
    return [
        {"subtopology_id": sub, "partitions": sorted(tasks[sub])}
        for sub in sorted(tasks, key=_sub_key)
        if tasks[sub]
    ]


def _from_wire(entries: Iterable[Any] | None) -> dict[str, frozenset[int]]:
    out: dict[str, frozenset[int]] = {}
    for t in entries or ():
        parts = frozenset(int(p) for p in t.partitions)
        if parts:
            out[str(t.subtopology_id)] = out.get(str(t.subtopology_id), frozenset()) | parts
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsTasks:
    """A member's active, standby and warm-up tasks."""

    active: TaskIds = dataclasses.field(default_factory=dict)
    standby: TaskIds = dataclasses.field(default_factory=dict)
    warmup: TaskIds = dataclasses.field(default_factory=dict)

    @classmethod
    def from_response(cls, response: Any) -> StreamsTasks:
        return cls(
            _from_wire(response.active_tasks),
            _from_wire(response.standby_tasks),
            _from_wire(response.warmup_tasks),
        )

    def wire(self) -> dict[str, list[dict[str, Any]]]:
        """The heartbeat's three owned-task fields."""
        return {
            "active_tasks": _wire_tasks(self.active),
            "standby_tasks": _wire_tasks(self.standby),
            "warmup_tasks": _wire_tasks(self.warmup),
        }

    @property
    def active_names(self) -> tuple[str, ...]:
        return task_names(self.active)

    @property
    def standby_names(self) -> tuple[str, ...]:
        """Standbys and warm-ups: both keep a copy of the state without processing."""
        both = {s: self.standby.get(s, frozenset()) | self.warmup.get(s, frozenset())
                for s in {*self.standby, *self.warmup}}  # fmt: skip
        return task_names(both)

    def same(self, other: StreamsTasks) -> bool:
        return (self.active_names, self.standby_names) == (other.active_names, other.standby_names)


@dataclasses.dataclass(frozen=True, slots=True)
class TopicInfo:
    """An internal topic the broker may create: ``partitions`` 0 lets it derive the count."""

    name: str
    partitions: int = 0
    configs: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "partitions": self.partitions,
            "replication_factor": 0,  # the broker's default.replication.factor
            "topic_configs": [{"key": k, "value": v} for k, v in sorted(self.configs.items())],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsSubtopology:
    """One subtopology as the group's topology describes it; ``copartition_groups`` hold
    indexes into ``source_topics`` and ``repartition_source_topics``."""

    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()

    def wire(self) -> dict[str, Any]:
        return {
            "subtopology_id": self.subtopology_id,
            "source_topics": list(self.source_topics),
            "source_topic_regex": [],
            "state_changelog_topics": [t.wire() for t in self.state_changelog_topics],
            "repartition_sink_topics": list(self.repartition_sink_topics),
            "repartition_source_topics": [t.wire() for t in self.repartition_source_topics],
            "copartition_groups": [
                {
                    "source_topics": list(src),
                    "source_topic_regex": [],
                    "repartition_source_topics": list(rep),
                }
                for src, rep in self.copartition_groups
            ],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsTopology:
    """The application's topology, sent when the member joins (epoch 0)."""

    subtopologies: tuple[StreamsSubtopology, ...]
    epoch: int = 0

    def wire(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "subtopologies": [s.wire() for s in self.subtopologies]}

    def source_topics(self, subtopology_id: str) -> tuple[str, ...]:
        """Every topic a task of this subtopology reads (user and repartition topics)."""
        for s in self.subtopologies:
            if s.subtopology_id == subtopology_id:
                return (*s.source_topics, *(t.name for t in s.repartition_source_topics))
        return ()


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsIdentity:
    """Who the member is beyond its member id: its process (a stable UUID per state
    directory, as Kafka Streams keeps one), the ``application.server`` endpoint for
    interactive queries, and its client tags (rack-aware standbys)."""

    process_id: str
    user_endpoint: tuple[str, int] | None = None
    client_tags: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        host_port = self.user_endpoint
        return {
            "process_id": self.process_id,
            "user_endpoint": None
            if host_port is None
            else {"host": host_port[0], "port": host_port[1]},
            "client_tags": [{"key": k, "value": v} for k, v in sorted(self.client_tags.items())],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class EndpointPartitions:
    """One ``application.server`` of the group and the partitions its tasks read
    (PartitionsByUserEndpoint): where an interactive query for a key goes."""

    host: str
    port: int
    active: tuple[tuple[str, int], ...]
    standby: tuple[tuple[str, int], ...]

    @classmethod
    def from_response(cls, entries: Iterable[Any]) -> tuple[EndpointPartitions, ...]:
        def flat(topics: Iterable[Any]) -> tuple[tuple[str, int], ...]:
            return tuple(sorted((str(t.topic), int(p)) for t in topics for p in t.partitions))

        return tuple(
            cls(
                str(e.user_endpoint.host),
                int(e.user_endpoint.port),
                flat(e.active_partitions),
                flat(e.standby_partitions),
            )
            for e in entries
        )
