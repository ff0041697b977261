"""kio codec dispatch by (api_key, api_version) and a version-tolerant entity builder.

kio has one frozen dataclass per API version. Handlers serving many versions build responses
with :func:`build`, passing a superset of fields: the ones a version lacks are dropped, ints
are turned into ``timedelta`` for kio's renamed ``*Ms`` fields, and nested entities are built
from plain dicts. Version branches thus stay out of the handlers.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

__all__ = ("Chunks", "Codec", "build", "codec_for", "encode_response", "field_info", "ms")


class Chunks(list[bytes]):
    """A write sink for kio writers: collects parts for ``writelines`` with no BytesIO copy."""

    def write(self, b: bytes) -> int:
        self.append(b)
        return len(b)


@dataclasses.dataclass(frozen=True, slots=True)
class Codec:
    """Readers and writers for one (api_key, api_version)."""

    request_cls: type
    response_cls: type
    read_header: Callable[[bytes, int], tuple[Any, int]]
    read_body: Callable[[bytes, int], tuple[Any, int]]
    write_header: Callable[[Any, Any], None]
    write_body: Callable[[Any, Any], None]


@cache
def codec_for(api_key: int, api_version: int) -> Codec:
    """Raise ``kio.index.KioIndexError`` when kio does not know the pair."""
    req = load_request_schema(api_key, api_version)
    resp = load_response_schema(api_key, api_version)
    return Codec(
        request_cls=req,
        response_cls=resp,
        read_header=entity_reader(req.__header_schema__),  # type: ignore[attr-defined]
        read_body=entity_reader(req),
        write_header=entity_writer(resp.__header_schema__),  # type: ignore[attr-defined]
        write_body=entity_writer(resp),
    )


def encode_response(codec: Codec, correlation_id: int, response: Any) -> Chunks:
    """Header + body of a response frame, without the 4-byte size prefix."""
    out = Chunks()
    header_cls = codec.response_cls.__header_schema__  # type: ignore[attr-defined]
    codec.write_header(out, header_cls(correlation_id=correlation_id))
    codec.write_body(out, response)
    return out


def _nested_entity(hint: Any) -> Any:
    """The entity class inside ``X``, ``tuple[X, ...]``, ``tuple[X, ...] | None``, or None."""
    if dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        found = _nested_entity(arg)
        if found is not None:
            return found
    return None


@cache
def field_info(cls: type) -> dict[str, tuple[str, Any]]:
    """field name → (kafka_type, nested entity class or None)."""
    hints = typing.get_type_hints(cls)
    info: dict[str, tuple[str, Any]] = {}
    for f in dataclasses.fields(cls):
        info[f.name] = (f.metadata.get("kafka_type", ""), _nested_entity(hints.get(f.name)))
    return info


def _convert(kafka_type: str, nested: Any, value: Any) -> Any:
    if nested is not None:
        if isinstance(value, (list, tuple)):
            return tuple(_convert(kafka_type, nested, v) for v in value)
        if isinstance(value, dict):
            return build(nested, **value)
        return value
    if kafka_type == "error_code" and not isinstance(value, ErrorCode):
        return ErrorCode(int(value))
    if kafka_type.startswith("timedelta") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64" and isinstance(value, int):
        if value < 0:
            return value
        return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
    if isinstance(value, list):
        return tuple(value)
    return value


def build(cls: type, **fields: Any) -> Any:
    """Instantiate a kio entity from a superset of fields (see the module docstring)."""
    info = field_info(cls)
    kwargs = {
        name: _convert(info[name][0], info[name][1], value)
        for name, value in fields.items()
        if name in info
    }
    return cls(**kwargs)


def ms(value: datetime.timedelta | int | None) -> int:
    """kio's timedelta fields back to milliseconds."""
    if value is None:
        return -1
    if isinstance(value, int):
        return value
    return int(value.total_seconds() * 1000)
