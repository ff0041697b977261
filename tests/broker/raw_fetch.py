"""Fetch requests as raw bytes: what a client that sends a long poll and hangs up sends."""

from __future__ import annotations

import datetime
import socket

from kio.serial import entity_writer

from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import Chunks, build, codec_for

_VERSION = 4


def fetch_frame(
    topic: str, partition: int = 0, *, max_wait_ms: int = 2**31 - 1, min_bytes: int = 2**31 - 1
) -> bytes:
    """A size-prefixed Fetch v4 of ``topic``-``partition`` from offset 0."""
    codec = codec_for(ApiKey.FETCH, _VERSION)
    header_cls = codec.request_cls.__header_schema__  # type: ignore[attr-defined]
    out = Chunks()
    entity_writer(header_cls)(
        out,
        header_cls(
            request_api_key=ApiKey.FETCH,
            request_api_version=_VERSION,
            correlation_id=1,
            client_id="raw-fetch",
        ),
    )
    request = build(
        codec.request_cls,
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        isolation_level=0,
        topics=[
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    )
    entity_writer(codec.request_cls)(out, request)
    body = b"".join(out)
    return len(body).to_bytes(4, "big") + body


def send_and_close(bootstrap: str, frame: bytes) -> None:
    """Connect, send ``frame`` and close at once without reading the answer."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(frame)
