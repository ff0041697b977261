"""Decode the ``consumer`` protocol's member metadata and assignment bytes.

DescribeGroups returns them opaque. Kafka's ConsumerProtocol writes an int16 version followed
by the ConsumerProtocolSubscription/Assignment struct of that version; a newer version than we
know is read with the newest schema we have, as Kafka does (later versions only append fields).
"""

from __future__ import annotations

import dataclasses
import struct
from functools import cache
from typing import Any

from kio.index import load_entity_module
from kio.schema.index import schema_name_map
from kio.serial import entity_reader
from kio.static.constants import EntityType

from streamrt.errors import StreamrtError

__all__ = (
    "ConsumerAssignment",
    "ConsumerProtocolError",
    "ConsumerSubscription",
    "decode_assignment",
    "decode_subscription",
    "entity_class",
)

_VERSION = struct.Struct(">h")


class ConsumerProtocolError(StreamrtError):
    """The bytes are not a consumer-protocol subscription or assignment."""


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerSubscription:
    version: int
    topics: tuple[str, ...]
    owned_partitions: dict[str, tuple[int, ...]]
    generation_id: int
    rack_id: str | None
    user_data: bytes | None


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerAssignment:
    version: int
    partitions: dict[str, tuple[int, ...]]
    user_data: bytes | None


def entity_class(schema: str, version: int) -> type:
    """kio's class of one version of a data schema (``consumer_protocol_subscription``...)."""
    known = schema_name_map[schema]
    if version not in known:
        raise ConsumerProtocolError(f"{schema}: no version {version} (known {sorted(known)})")
    module = load_entity_module(schema, version, EntityType.data)
    cls: type = getattr(module, known[version][EntityType.data].split(":", 1)[1])
    return cls


@cache
def _reader(schema: str, version: int) -> Any:
    """The reader for a wire version, capped at kio's newest (later ones only append)."""
    return entity_reader(entity_class(schema, min(version, max(schema_name_map[schema]))))


def _parse(schema: str, data: bytes) -> tuple[int, Any]:
    if len(data) < _VERSION.size:
        raise ConsumerProtocolError(f"{schema}: {len(data)} bytes, too short for a version")
    version = _VERSION.unpack_from(data, 0)[0]
    if version < 0:
        raise ConsumerProtocolError(f"{schema}: negative version {version}")
    read = _reader(schema, version)
    try:
        entity, _size = read(data, _VERSION.size)
    except Exception as exc:
        raise ConsumerProtocolError(f"{schema} v{version}: cannot decode: {exc!r}") from exc
    return version, entity


def _partitions(topic_partitions: Any) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for tp in topic_partitions:
        out[str(tp.topic)] = tuple(sorted(out.get(str(tp.topic), ()) + tuple(tp.partitions)))
    return out


def decode_subscription(data: bytes) -> ConsumerSubscription:
    """A member's JoinGroup metadata for protocol type ``consumer``."""
    version, entity = _parse("consumer_protocol_subscription", data)
    return ConsumerSubscription(
        version=version,
        topics=tuple(entity.topics),
        owned_partitions=_partitions(getattr(entity, "owned_partitions", ())),
        generation_id=int(getattr(entity, "generation_id", -1)),
        rack_id=getattr(entity, "rack_id", None),
        user_data=entity.user_data,
    )


def decode_assignment(data: bytes) -> ConsumerAssignment:
    """A member's SyncGroup assignment for protocol type ``consumer``."""
    version, entity = _parse("consumer_protocol_assignment", data)
    return ConsumerAssignment(
        version=version,
        partitions=_partitions(entity.assigned_partitions),
        user_data=entity.user_data,
    )
