"""Encode the ``consumer`` protocol's subscription and assignment (Kafka's ConsumerProtocol).

The bytes a member puts in JoinGroup's metadata and the leader puts in SyncGroup's
assignments: an int16 version, then ConsumerProtocolSubscription/Assignment of that version.
Decoding lives in :mod:`streamrt.admin.consumer_protocol` (DescribeGroups needs it too) and is
re-exported here, so both directions are one import for the membership client.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from kio.serial import entity_writer

from streamrt.admin.consumer_protocol import (
    ConsumerAssignment,
    ConsumerProtocolError,
    ConsumerSubscription,
    decode_assignment,
    decode_subscription,
    entity_class,
)
from streamrt.topic_partition import TopicPartition
from streamrt.wire.codec import Chunks, build

__all__ = (
    "COOPERATIVE_MIN_VERSION",
    "SUBSCRIPTION_VERSION",
    "ConsumerAssignment",
    "ConsumerProtocolError",
    "ConsumerSubscription",
    "TopicPartition",
    "by_topic",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "flatten",
)

SUBSCRIPTION_VERSION = 3  # Kafka 3.x+ clients write v3 (rack id); v1 added owned partitions
COOPERATIVE_MIN_VERSION = 1  # owned partitions; v2 adds the generation the leader checks
ASSIGNMENT_VERSION = 3
_VERSION = struct.Struct(">h")


def by_topic(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """``[(topic, p), ...]`` → the protocol's ``[{topic, partitions}]``, sorted."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(grouped.items())]


def flatten(partitions: Mapping[str, Iterable[int]]) -> set[TopicPartition]:
    """A decoded ``{topic: (p, ...)}`` → ``{(topic, p), ...}``."""
    return {TopicPartition(t, p) for t, ps in partitions.items() for p in ps}


def _encode(schema: str, version: int, **entity_fields: Any) -> bytes:
    cls = entity_class(schema, version)
    out = Chunks()
    write: Any = entity_writer(cls)
    write(out, build(cls, **entity_fields))
    return _VERSION.pack(version) + b"".join(out)


def encode_subscription(
    topics: Iterable[str],
    *,
    owned_partitions: Iterable[TopicPartition] = (),
    generation_id: int = -1,
    rack_id: str | None = None,
    user_data: bytes | None = None,
    version: int = SUBSCRIPTION_VERSION,
) -> bytes:
    """A member's JoinGroup metadata; fields the version lacks are dropped, as Kafka does."""
    return _encode(
        "consumer_protocol_subscription",
        version,
        topics=sorted(set(topics)),
        user_data=user_data,
        owned_partitions=by_topic(owned_partitions),
        generation_id=generation_id,
        rack_id=rack_id,
    )


def encode_assignment(
    partitions: Iterable[TopicPartition],
    *,
    user_data: bytes | None = None,
    version: int = ASSIGNMENT_VERSION,
) -> bytes:
    """One member's SyncGroup assignment (the leader writes one per member)."""
    return _encode(
        "consumer_protocol_assignment",
        version,
        assigned_partitions=by_topic(partitions),
        user_data=user_data,
    )
