"""Drop the tagged fields a request's schema does not know, as Kafka ignores them.

Flexible request versions (KIP-482) end the header and every struct with tagged fields; a newer
client may send tags this broker's schema has no field for. Kafka keeps them as
``unknownTaggedFields`` and carries on; kio's reader refuses them. So when kio refuses a
request for that reason, the server calls :func:`without_unknown_tags` and reads the result:
the frame rewritten with only the tags the schema knows, everything else byte for byte.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

__all__ = ("UnknownTagError", "without_unknown_tags")

_FIXED = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_HEADER_FIXED = 8  # api_key, api_version, correlation_id


class UnknownTagError(ValueError):
    """The frame does not follow the schema (so it is not only an unknown tag)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    kafka_type: str | None  # None: a nested entity
    entity: type | None
    array: bool
    nullable: bool


@functools.cache
def _layout(cls: type) -> tuple[tuple[_Field, ...], frozenset[int]]:
    """The fields read in order, and the tags the entity knows."""
    hints = typing.get_type_hints(cls)
    ordered: list[_Field] = []
    tags: set[int] = set()
    for f in dataclasses.fields(cls):
        if "tag" in f.metadata:
            tags.add(int(f.metadata["tag"]))
            continue
        hint = hints[f.name]
        args = typing.get_args(hint)
        nullable = type(None) in args
        array = typing.get_origin(hint) is tuple or any(typing.get_origin(a) is tuple for a in args)
        entity = _entity_in(hint)
        ordered.append(_Field(f.metadata.get("kafka_type"), entity, array, nullable))
    return tuple(ordered), frozenset(tags)


def _entity_in(hint: Any) -> type | None:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint
    for arg in typing.get_args(hint):
        found = _entity_in(arg)
        if found is not None:
            return found
    return None


class _Rewriter:
    """Copies the frame from ``pos``, rewriting tagged-field sections."""

    def __init__(self, frame: bytes) -> None:
        self.frame = frame
        self.pos = 0
        self.out = bytearray()

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.frame):
            raise UnknownTagError("frame shorter than its schema")
        chunk = self.frame[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def copy(self, n: int) -> bytes:
        chunk = self.take(n)
        self.out += chunk
        return chunk

    def uvarint(self, *, copy: bool = True) -> int:
        value, shift = 0, 0
        while True:
            (byte,) = self.take(1)
            if copy:
                self.out.append(byte)
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 35:
                raise UnknownTagError("varint too long")

    def signed(self, n: int) -> int:
        return int.from_bytes(self.copy(n), "big", signed=True)

    def tags(self, known: frozenset[int]) -> None:
        kept: list[bytes] = []
        for _ in range(self.uvarint(copy=False)):
            tag, size = self.uvarint(copy=False), self.uvarint(copy=False)
            data = self.take(size)
            if tag in known:
                kept.append(_uvarint(tag) + _uvarint(size) + data)
        self.out += _uvarint(len(kept))
        for entry in kept:
            self.out += entry

    def entity(self, cls: type, flexible: bool) -> None:
        ordered, known = _layout(cls)
        for f in ordered:
            self.field(f, flexible)
        if flexible:
            self.tags(known)

    def field(self, f: _Field, flexible: bool) -> None:
        if f.array:
            count = self.uvarint() - 1 if flexible else self.signed(4)
            for _ in range(max(count, 0)):
                self.value(f, flexible)
        elif f.entity is not None and f.nullable:
            if self.signed(1) >= 0:
                self.entity(f.entity, flexible)
        else:
            self.value(f, flexible)

    def value(self, f: _Field, flexible: bool) -> None:
        if f.entity is not None:
            self.entity(f.entity, flexible)
        elif f.kafka_type in _FIXED:
            self.copy(_FIXED[f.kafka_type])
        elif f.kafka_type == "string":
            self.copy(max(self.uvarint() - 1 if flexible else self.signed(2), 0))
        elif f.kafka_type in ("bytes", "records"):
            self.copy(max(self.uvarint() - 1 if flexible else self.signed(4), 0))
        else:
            raise UnknownTagError(f"unsupported kafka_type {f.kafka_type!r}")


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def without_unknown_tags(frame: bytes, request_cls: type) -> bytes:
    """``frame`` (header v2 + a flexible body) keeping only the tags the schema knows.

    The header has no tagged fields of its own (its client id is a classic string), so all
    of its tags go; :class:`UnknownTagError` if the frame does not fit the schema at all.
    """
    w = _Rewriter(frame)
    w.copy(_HEADER_FIXED)
    w.copy(max(w.signed(2), 0))  # client_id: nullable int16-length string
    w.tags(frozenset())
    w.entity(request_cls, flexible=True)
    if w.pos != len(frame):
        raise UnknownTagError(f"{len(frame) - w.pos} bytes after the request")
    return bytes(w.out)
