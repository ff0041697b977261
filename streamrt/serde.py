"""Serdes: how keys and values cross the wire.

A serde turns a Python value into bytes and back. ``None`` always maps to ``None`` so that
tombstones (deletes in compacted topics) survive every serde unchanged.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Generic, Protocol, TypeVar

import orjson

from streamrt.errors import ConfigError

__all__ = (
    "BytesSerde",
    "FaustRecordSerde",
    "IntSerde",
    "JsonSerde",
    "Serde",
    "SerdeLike",
    "StrSerde",
    "bind_serde",
    "serde_for",
)

T = TypeVar("T")


class Serde(Protocol[T]):
    """Converts values of one type to bytes and back (Kafka's ``Serde<T>``)."""

    def serialize(self, value: T | None) -> bytes | None: ...

    def deserialize(self, data: bytes | None) -> T | None: ...


class BytesSerde:
    """Passes bytes through: the default, as in Kafka's ``ByteArraySerde``."""

    def serialize(self, value: bytes | None) -> bytes | None:
        return None if value is None else bytes(value)

    def deserialize(self, data: bytes | None) -> bytes | None:
        return data


class StrSerde:
    """UTF-8 text."""

    def serialize(self, value: str | None) -> bytes | None:
        return None if value is None else value.encode("utf-8")

    def deserialize(self, data: bytes | None) -> str | None:
        return None if data is None else data.decode("utf-8")


class IntSerde:
    """A signed 64-bit big-endian integer, byte-compatible with Kafka's ``LongSerializer``."""

    _FORMAT = struct.Struct(">q")

    def serialize(self, value: int | None) -> bytes | None:
        return None if value is None else self._FORMAT.pack(value)

    def deserialize(self, data: bytes | None) -> int | None:
        if data is None:
            return None
        if len(data) != 8:
            raise ValueError(f"IntSerde expects 8 bytes, got {len(data)}")
        return int(self._FORMAT.unpack(data)[0])


_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


class JsonSerde:
    """JSON documents: compact separators, sorted keys, UTF-8 (written by orjson).

    The bytes equal the stdlib's ``json.dumps(v, separators=(",", ":"), sort_keys=True)``
    for ASCII text; non-ASCII characters are written as UTF-8 instead of ``\\u`` escapes
    (the same value either way). Every document older versions wrote still reads: what
    orjson refuses (``NaN``, ``Infinity``) is read by the stdlib. Integers beyond 64 bits and
    types orjson does not know go through the stdlib too. NaN and infinities are written as
    ``null`` (standard JSON has no NaN). See docs/bench/history.md, "Throughput work".
    """

    def serialize(self, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            return orjson.dumps(value, option=_ORJSON_OPTIONS)
        except TypeError:
            return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")

    def deserialize(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            return json.loads(data)


class FaustRecordSerde(Generic[T]):
    """A ``faust.Record`` model, stored as its JSON form (``to_representation``).

    faust is imported lazily: importing it is slow and it is an optional dependency.
    """

    def __init__(self, model: type[T]) -> None:
        self.model = model

    def serialize(self, value: T | None) -> bytes | None:
        if value is None:
            return None
        rep = value.to_representation()  # type: ignore[attr-defined]
        return json.dumps(rep, separators=(",", ":"), default=str).encode("utf-8")

    def deserialize(self, data: bytes | None) -> T | None:
        if data is None:
            return None
        return self.model.from_data(json.loads(data))  # type: ignore[attr-defined,no-any-return]


SerdeLike = Serde[Any] | str | type | None

_BY_NAME: dict[str, type] = {
    "bytes": BytesSerde,
    "str": StrSerde,
    "string": StrSerde,
    "int": IntSerde,
    "long": IntSerde,
    "json": JsonSerde,
}


def _is_faust_record(cls: type) -> bool:
    try:
        import faust
    except ImportError:
        return False
    return isinstance(cls, type) and issubclass(cls, faust.Record)


def serde_for(spec: SerdeLike) -> Serde[Any]:
    """Resolve a serde given by name (``"json"``), instance, or ``faust.Record`` subclass."""
    if spec is None:
        return BytesSerde()
    if isinstance(spec, str):
        try:
            return _BY_NAME[spec.lower()]()  # type: ignore[no-any-return]
        except KeyError:
            raise ConfigError(f"unknown serde {spec!r}; known: {sorted(_BY_NAME)}") from None
    if isinstance(spec, type):
        if spec in _BY_NAME.values():
            return spec()  # type: ignore[no-any-return]
        if _is_faust_record(spec):
            return FaustRecordSerde(spec)
        raise ConfigError(f"{spec!r} is not a serde or a faust.Record model")
    if hasattr(spec, "serialize") and hasattr(spec, "deserialize"):
        return spec
    raise ConfigError(f"{spec!r} is not a serde")


def bind_serde(serde: Serde[Any], topic: str, *, is_key: bool) -> Serde[Any]:
    """The serde as used on ``topic``: a serde with ``for_topic`` (a schema registry serde,
    whose subject names the topic) gets its topic and role; any other is returned as is."""
    bind = getattr(serde, "for_topic", None)
    return serde if bind is None else bind(topic, is_key=is_key)  # type: ignore[no-any-return]
