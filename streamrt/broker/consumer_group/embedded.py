"""The consumer embedded protocol as the broker reads and writes it for classic members of a
consumer group (Kafka's ``ConsumerProtocol``): a JoinGroup's subscription bytes (topics, owned
partitions, rack) and a SyncGroup's assignment bytes, each an int16 version then the
ConsumerProtocolSubscription/Assignment struct of that version (kio's generated schemas).

The broker reads them only while a group migrates between protocols: to convert a classic
group's members (their last subscription and assignment), and to answer a classic member of a
consumer group. Bad bytes raise ``MalformedEmbeddedProtocol`` (the caller answers a clear error).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Mapping
from functools import cache
from typing import Any

from kio.index import load_entity_module
from kio.schema.index import schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from streamrt.wire.codec import Chunks, build

__all__ = (
    "PROTOCOL_TYPE",
    "MalformedEmbeddedProtocol",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "subscription_version",
)

#: the classic protocol type of consumers (Kafka's ``ConsumerProtocol.PROTOCOL_TYPE``)
PROTOCOL_TYPE = "consumer"
_VERSION = struct.Struct(">h")
_SUBSCRIPTION = "consumer_protocol_subscription"
_ASSIGNMENT = "consumer_protocol_assignment"
Partitions = dict[str, frozenset[int]]


class MalformedEmbeddedProtocol(ValueError):
    """The bytes are not a consumer-protocol subscription or assignment."""


@dataclasses.dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: Partitions
    rack_id: str | None


@cache
def _schema(schema: str, version: int) -> tuple[int, type]:
    """(the version used, its class): a newer version than kio knows is read with the newest
    one, as Kafka does (later versions only append fields)."""
    known = schema_name_map[schema]
    used = min(version, max(known))
    path = known[used][EntityType.data]
    module = load_entity_module(schema, used, EntityType.data)
    return used, getattr(module, path.split(":", 1)[1])


def _decode(schema: str, data: bytes) -> tuple[int, Any]:
    if len(data) < _VERSION.size:
        raise MalformedEmbeddedProtocol(f"{schema}: {len(data)} bytes, too short")
    version = _VERSION.unpack_from(data, 0)[0]
    if version < 0:
        raise MalformedEmbeddedProtocol(f"{schema}: negative version {version}")
    _used, cls = _schema(schema, version)
    read: Any = entity_reader(cls)
    try:
        entity, _size = read(data, _VERSION.size)
    except Exception as exc:  # kio raises several kinds on truncated or bad bytes
        raise MalformedEmbeddedProtocol(f"{schema} v{version}: {exc!r}") from exc
    return version, entity


def _partitions(topic_partitions: Any) -> Partitions:
    out: dict[str, frozenset[int]] = {}
    for tp in topic_partitions:
        out[str(tp.topic)] = out.get(str(tp.topic), frozenset()) | frozenset(tp.partitions)
    return out


def decode_subscription(data: bytes) -> Subscription:
    version, entity = _decode(_SUBSCRIPTION, data)
    return Subscription(
        version,
        tuple(str(t) for t in entity.topics),
        _partitions(getattr(entity, "owned_partitions", ())),
        getattr(entity, "rack_id", None),
    )


def subscription_version(data: bytes) -> int:
    """The version a member wrote its subscription in (its assignment is written in it too,
    as Kafka's downgrade does); 0 for unreadable bytes."""
    return _VERSION.unpack_from(data, 0)[0] if len(data) >= _VERSION.size else 0


def decode_assignment(data: bytes) -> Partitions:
    """A classic member's assignment; empty bytes (no assignment yet) are an empty one."""
    if not data:
        return {}
    return _partitions(_decode(_ASSIGNMENT, data)[1].assigned_partitions)


def encode_assignment(partitions: Mapping[str, frozenset[int]], version: int = 3) -> bytes:
    used, cls = _schema(_ASSIGNMENT, max(version, 0))
    entity = build(
        cls,
        assigned_partitions=[
            {"topic": t, "partitions": sorted(ps)} for t, ps in sorted(partitions.items()) if ps
        ],
        user_data=None,
    )
    out = Chunks()
    write: Any = entity_writer(cls)
    write(out, entity)
    return _VERSION.pack(used) + b"".join(out)
