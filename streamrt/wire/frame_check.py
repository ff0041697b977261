"""Check every length in a request frame against the bytes left, before kio reads it.

kio's native reader sizes an array's storage from the count on the wire before reading an
element: a flexible request whose compact-array count is a ~2^32 unsigned varint makes it ask for
tens of GB, and the allocation failure aborts the whole process (no Python exception). So the
server walks the frame by its kio schema first, allocating nothing: every array count, string,
bytes and records length, tagged-field count and size is compared with what is left of the frame
(an array of N elements needs at least N * the element's smallest encoding, and at least N bytes,
as Kafka's generated readers require), and :class:`FrameLengthError` names the first that lies.
A null array where the schema allows none is refused too, as Kafka refuses it (kio would hand the
handler None). The walk only guards lengths; kio still does the decoding and its other checks.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

__all__ = ("FrameLengthError", "check_request_lengths", "check_response_lengths")

_FIXED = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_MAX_VARINT_BYTES = 5  # a 32-bit unsigned varint, as Kafka's ByteUtils reads it

# Plan operations: (code, argument). A plan is the tuple of operations of one entity or value.
_SKIP = 0  # fixed-size fields: argument = their total size
_COMPACT = 1  # flexible string, bytes or records: uvarint length + 1 (0 = null)
_CLASSIC = 2  # classic string (argument 2: int16 length) or bytes/records (4: int32 length)
_ARRAY = 3  # argument = (flexible, nullable, element plan, element's minimal size, fixed size)
_STRUCT = 4  # nullable nested entity: int8 marker (-1 = null), argument = its plan
_TAGS = 5  # tagged fields: argument = {tag: plan of the value}

_Op = tuple[int, Any]
_Plan = tuple[_Op, ...]


class FrameLengthError(ValueError):
    """A length or count in the frame claims more bytes than the frame has left (or an array
    is null where its schema allows no null)."""


def check_request_lengths(frame: bytes | memoryview, request_cls: type) -> None:
    """Raise :class:`FrameLengthError` unless every length in header + body of ``frame`` fits
    in the bytes after it (``request_cls`` is the kio request schema of its api key/version)."""
    _walk(_message_plan(request_cls), frame, 0, len(frame))


def check_response_lengths(payload: bytes | memoryview, response_cls: type) -> None:
    """The same check for a response (header + body) a client reads: a broker, or anything
    posing as one, must not be able to make a client allocate from a lying count either."""
    _walk(_message_plan(response_cls), payload, 0, len(payload))


@functools.cache
def _message_plan(message_cls: type) -> _Plan:
    header_cls: type = message_cls.__header_schema__  # type: ignore[attr-defined]
    # The header's own fields are classic even in header v2 (a nullable int16 client id).
    header = _entity_plan(header_cls, False)
    if getattr(header_cls, "__flexible__", False):
        header = _merge(header, ((_TAGS, _known_tags(header_cls, True)),))
    body = _entity_plan(message_cls, bool(getattr(message_cls, "__flexible__", False)))
    return _merge(header, body)


@functools.cache
def _entity_plan(cls: type, flexible: bool) -> _Plan:
    hints = typing.get_type_hints(cls)
    plan: _Plan = ()
    for f in dataclasses.fields(cls):
        if "tag" not in f.metadata:
            plan = _merge(plan, _field_plan(hints[f.name], f.metadata.get("kafka_type"), flexible))
    if flexible:
        plan = _merge(plan, ((_TAGS, _known_tags(cls, flexible)),))
    return plan


def _known_tags(cls: type, flexible: bool) -> dict[int, _Plan]:
    hints = typing.get_type_hints(cls)
    return {
        int(f.metadata["tag"]): _field_plan(hints[f.name], f.metadata.get("kafka_type"), flexible)
        for f in dataclasses.fields(cls)
        if "tag" in f.metadata
    }


def _field_plan(hint: Any, kafka_type: str | None, flexible: bool) -> _Plan:
    args = typing.get_args(hint)
    nullable = type(None) in args
    inner = next((a for a in args if a is not type(None)), hint) if nullable else hint
    if typing.get_origin(inner) is tuple:
        element = _value_plan(typing.get_args(inner)[0], kafka_type, flexible)
        fixed = element[0][1] if len(element) == 1 and element[0][0] == _SKIP else 0
        least = max(_min_size(element), 1)
        return ((_ARRAY, (flexible, nullable, element, least, fixed)),)
    if nullable and dataclasses.is_dataclass(inner):
        return ((_STRUCT, _entity_plan(typing.cast(type, inner), flexible)),)
    return _value_plan(inner, kafka_type, flexible)


def _value_plan(hint: Any, kafka_type: str | None, flexible: bool) -> _Plan:
    if dataclasses.is_dataclass(hint):
        return _entity_plan(typing.cast(type, hint), flexible)
    if kafka_type in _FIXED:
        return ((_SKIP, _FIXED[kafka_type]),)
    if kafka_type in ("string", "bytes", "records"):
        if flexible:
            return ((_COMPACT, None),)
        return ((_CLASSIC, 2 if kafka_type == "string" else 4),)
    raise TypeError(f"no length rule for kafka_type {kafka_type!r} ({hint})")


def _merge(first: _Plan, second: _Plan) -> _Plan:
    """Concatenate, joining neighbouring fixed-size runs into one skip."""
    if first and second and first[-1][0] == _SKIP and second[0][0] == _SKIP:
        return (*first[:-1], (_SKIP, first[-1][1] + second[0][1]), *second[1:])
    return first + second


def _min_size(plan: _Plan) -> int:
    """The fewest bytes ``plan`` can take (null or empty lengths, no tags)."""
    total = 0
    for code, arg in plan:
        if code in (_SKIP, _CLASSIC):
            total += arg
        elif code == _ARRAY:
            total += 1 if arg[0] else 4
        else:  # a compact length, a null struct's marker, an empty tag section
            total += 1
    return total


def _uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(pos, min(pos + _MAX_VARINT_BYTES, end)):
        byte = buf[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i + 1
        shift += 7
    if end - pos < _MAX_VARINT_BYTES:
        raise FrameLengthError(f"varint at offset {pos} runs past the end of the frame")
    raise FrameLengthError(f"varint at offset {pos} is longer than {_MAX_VARINT_BYTES} bytes")


def _length(
    buf: bytes | memoryview, pos: int, end: int, flexible: bool, width: int
) -> tuple[int, int]:
    """(length, position after it); -1 means null."""
    if flexible:
        if pos < end and buf[pos] < 0x80:  # the common one-byte varint
            return buf[pos] - 1, pos + 1
        value, pos = _uvarint(buf, pos, end)
        return value - 1, pos
    if pos + width > end:
        raise FrameLengthError(f"{width}-byte length at offset {pos} runs past the end")
    value = int.from_bytes(buf[pos : pos + width], "big", signed=True)
    if value < -1:
        raise FrameLengthError(f"negative length {value} at offset {pos}")
    return value, pos + width


def _too_long(what: str, claimed: int, needed: int, pos: int, end: int) -> FrameLengthError:
    return FrameLengthError(
        f"{what} of {claimed} at offset {pos} needs at least {needed} bytes "
        f"but {end - pos} are left"
    )


def _walk(plan: _Plan, buf: bytes | memoryview, pos: int, end: int) -> int:
    """Check ``plan`` over ``buf[pos:end]``; the position after it. The common one-byte
    lengths and empty tag sections are read inline: this runs on every request."""
    for code, arg in plan:
        if code == _SKIP:
            pos += arg
            if pos > end:
                raise FrameLengthError(f"frame ends {pos - end} bytes before its fixed fields do")
        elif code == _COMPACT:
            if pos < end and buf[pos] < 0x80:  # length + 1 in one byte: skip both
                pos += buf[pos] or 1
                if pos > end:
                    raise FrameLengthError(f"string or bytes ends {pos - end} bytes past the frame")
            else:
                pos = _sized(buf, pos, end, True, 0)
        elif code == _TAGS:
            if pos < end and buf[pos] == 0:
                pos += 1
            else:
                pos = _tags(arg, buf, pos, end)
        elif code == _ARRAY:
            pos = _array(arg, buf, pos, end)
        elif code == _CLASSIC:
            pos = _sized(buf, pos, end, False, arg)
        else:
            pos = _struct(arg, buf, pos, end)
    return pos


def _struct(plan: _Plan, buf: bytes | memoryview, pos: int, end: int) -> int:
    if pos >= end:
        raise FrameLengthError("frame ends before a struct's null marker")
    if buf[pos] >= 0x80:  # int8 < 0: null
        return pos + 1
    return _walk(plan, buf, pos + 1, end)


def _sized(buf: bytes | memoryview, pos: int, end: int, flexible: bool, width: int) -> int:
    size, pos = _length(buf, pos, end, flexible, width)
    if size > end - pos:
        raise _too_long("string or bytes", size, size, pos, end)
    return pos + size if size > 0 else pos


def _array(
    arg: tuple[bool, bool, _Plan, int, int], buf: bytes | memoryview, pos: int, end: int
) -> int:
    flexible, nullable, element, least, fixed = arg
    count, pos = _length(buf, pos, end, flexible, 4)
    if count < 0 and not nullable:  # kio would hand the handler None (Kafka refuses it)
        raise FrameLengthError(f"null array before offset {pos} where the schema allows none")
    if count * least > end - pos:
        raise _too_long("array", count, count * least, pos, end)
    if fixed:
        return pos + count * fixed if count > 0 else pos
    for _ in range(count):
        pos = _walk(element, buf, pos, end)
    return pos


def _tags(known: dict[int, _Plan], buf: bytes | memoryview, pos: int, end: int) -> int:
    count, pos = _uvarint(buf, pos, end)
    if count * 2 > end - pos:  # each tag takes at least its number and its size
        raise _too_long("tagged-field section", count, count * 2, pos, end)
    for _ in range(count):
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        if size > end - pos:
            raise _too_long(f"tagged field {tag}", size, size, pos, end)
        plan = known.get(tag)
        if plan is not None:
            _walk(plan, buf, pos, pos + size)
        pos += size
    return pos
