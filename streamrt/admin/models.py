"""Plain results of admin operations, independent of the API version that produced them."""

from __future__ import annotations

import dataclasses
from typing import Any

from streamrt.admin.consumer_protocol import ConsumerAssignment, ConsumerSubscription

__all__ = (
    "ConfigEntry",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "NewTopic",
    "OffsetAndMetadata",
    "PartitionInfo",
    "TopicDescription",
)


@dataclasses.dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None  # ListGroups v4+ only
    coordinator_id: int


@dataclasses.dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    subscription: ConsumerSubscription | None  # decoded when the protocol type is "consumer"
    assignment: ConsumerAssignment | None
    metadata: bytes = dataclasses.field(repr=False)
    assignment_bytes: bytes = dataclasses.field(repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscription": list(self.subscription.topics) if self.subscription else None,
            "assignment": (
                {t: list(p) for t, p in self.assignment.partitions.items()}
                if self.assignment
                else None
            ),
        }


@dataclasses.dataclass(frozen=True, slots=True)
class GroupDescription:
    """DescribeGroups' view. Kafka does not return the generation id, so there is none here."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator_id: int

    def to_json(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "state": self.state,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "coordinator_id": self.coordinator_id,
            "members": [m.to_json() for m in self.members],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: str | None
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topic_id": self.topic_id,
            "is_internal": self.is_internal,
            "partitions": [dataclasses.asdict(p) for p in self.partitions],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class NewTopic:
    """A CreateTopics entry; -1 asks the broker for its default (CreateTopics v4+)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool
    is_sensitive: bool
    source: str  # Kafka's ConfigSource name, e.g. DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    metadata: str | None
    leader_epoch: int | None
