"""The client side of the kio codec: encode requests, decode responses, pick versions.

:mod:`streamrt.wire.codec` serves the broker side (read requests, write responses); this module
is its mirror for anything that talks to a broker (the admin client, tests, tools). Both use the
same kio entity classes.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from kio.schema.index import api_key_map
from kio.serial import entity_reader, entity_writer

from streamrt.errors import StreamrtError
from streamrt.wire.codec import Chunks, codec_for
from streamrt.wire.frame_check import check_response_lengths

__all__ = (
    "ClientCodec",
    "UnsupportedVersionError",
    "api_name",
    "client_codec",
    "kio_versions",
    "pick_version",
)

_SIZE = struct.Struct(">i")


class UnsupportedVersionError(StreamrtError):
    """The broker and this client share no version of an API the operation needs."""


def api_name(api_key: int) -> str:
    return api_key_map.get(api_key, f"api_key={api_key}")


@dataclasses.dataclass(frozen=True, slots=True)
class ClientCodec:
    """The client side of one (api_key, version): write requests, read responses.

    :func:`streamrt.wire.codec.codec_for` serves the broker side (read requests, write
    responses); the entity classes are the same.
    """

    api_key: int
    version: int
    request_cls: type
    response_cls: type
    write_header: Callable[[Any, Any], None]
    write_body: Callable[[Any, Any], None]
    read_header: Callable[[bytes, int], tuple[Any, int]]
    read_body: Callable[[bytes, int], tuple[Any, int]]

    def encode_request(self, correlation_id: int, client_id: str, request: Any) -> bytes:
        header_cls = self.request_cls.__header_schema__  # type: ignore[attr-defined]
        header = header_cls(
            request_api_key=self.api_key,
            request_api_version=self.version,
            correlation_id=correlation_id,
            client_id=client_id,
        )
        out = Chunks()
        self.write_header(out, header)
        self.write_body(out, request)
        payload = b"".join(out)
        return _SIZE.pack(len(payload)) + payload

    def decode_response(self, payload: bytes) -> Any:
        """Parse header + body; kio picks ApiVersions' always-v0 response header itself.
        Every length is checked against the payload first (:class:`FrameLengthError`)."""
        check_response_lengths(payload, self.response_cls)
        _header, offset = self.read_header(payload, 0)
        body, _size = self.read_body(payload, offset)
        return body


@cache
def client_codec(api_key: int, version: int) -> ClientCodec:
    """Raise ``kio.index.KioIndexError`` when kio does not know the pair."""
    codec = codec_for(api_key, version)
    req, resp = codec.request_cls, codec.response_cls
    return ClientCodec(
        api_key=api_key,
        version=version,
        request_cls=req,
        response_cls=resp,
        write_header=entity_writer(req.__header_schema__),  # type: ignore[attr-defined]
        write_body=entity_writer(req),
        read_header=entity_reader(resp.__header_schema__),  # type: ignore[attr-defined]
        read_body=entity_reader(resp),
    )


def kio_versions(api_key: int) -> range:
    """The versions of ``api_key`` kio can encode and decode."""
    from kio.schema.index import schema_name_map

    known = sorted(schema_name_map[api_key_map[api_key]])
    return range(known[0], known[-1] + 1)


def pick_version(
    broker_versions: Mapping[int, tuple[int, int]],
    api_key: int,
    *,
    min_version: int = 0,
    max_version: int = 32767,
) -> int:
    """The highest version that the broker, kio and the calling code all support.

    ``min_version``/``max_version`` are the range the calling code knows how to build and
    read (e.g. LeaveGroup needs >= 3 for a batch of members).
    """
    name = api_name(api_key)
    if api_key not in broker_versions:
        raise UnsupportedVersionError(f"the broker does not support {name}")
    broker_min, broker_max = broker_versions[api_key]
    kio = kio_versions(api_key)
    low = max(broker_min, kio.start, min_version)
    high = min(broker_max, kio.stop - 1, max_version)
    if low > high:
        raise UnsupportedVersionError(
            f"{name}: the broker supports v{broker_min}-v{broker_max}, this client needs "
            f"v{max(kio.start, min_version)}-v{min(kio.stop - 1, max_version)}"
        )
    return high
