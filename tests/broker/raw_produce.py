"""Produce requests from raw bytes on one connection: the way to send batches no client would
(lying headers, bombs), and read Kafka's per-partition answer."""

from __future__ import annotations

import socket
from typing import Any

from kio.serial import entity_reader, entity_writer

from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import Chunks, build, codec_for

_VERSION = 8


class RawProducer:
    """One connection sending Produce v8 (acks=-1) with the caller's record bytes."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)), timeout=30)
        self._correlation = 0
        self._codec = codec_for(ApiKey.PRODUCE, _VERSION)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RawProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def produce(self, topic: str, partition: int, records: bytes) -> tuple[int, int]:
        """(error code, base offset) of the partition's answer."""
        self._correlation += 1
        header_cls = self._codec.request_cls.__header_schema__  # type: ignore[attr-defined]
        out = Chunks()
        entity_writer(header_cls)(
            out,
            header_cls(
                request_api_key=ApiKey.PRODUCE,
                request_api_version=_VERSION,
                correlation_id=self._correlation,
                client_id="raw",
            ),
        )
        request = build(
            self._codec.request_cls,
            transactional_id=None,
            acks=-1,
            timeout=30_000,
            topic_data=[
                {"name": topic, "partition_data": [{"index": partition, "records": records}]}
            ],
        )
        entity_writer(self._codec.request_cls)(out, request)
        body = b"".join(out)
        self._sock.sendall(len(body).to_bytes(4, "big") + body)
        response = self._read()
        part: Any = response.responses[0].partition_responses[0]
        return int(part.error_code), int(part.base_offset)

    def _read(self) -> Any:
        head = self._sock.recv(4, socket.MSG_WAITALL)
        assert len(head) == 4, "broker closed the connection instead of answering"
        frame = self._sock.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
        response_header = self._codec.response_cls.__header_schema__  # type: ignore[attr-defined]
        header, offset = entity_reader(response_header)(frame, 0)
        assert header.correlation_id == self._correlation
        response, _ = entity_reader(self._codec.response_cls)(frame, offset)
        return response
