"""Shared helpers of the transaction tests: a broker with fast transaction timings, topic setup,
reading a topic under an isolation level, and raw requests for error-code checks."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from kio.serial import entity_reader, entity_writer

from streamrt.broker.embedded import BrokerThread
from streamrt.wire.codec import Chunks, build, codec_for

TXN_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "300",
}


def start_txn_broker(data_dir: Path, overrides: dict[str, str] | None = None) -> BrokerThread:
    return BrokerThread(data_dir, {**TXN_OVERRIDES, **(overrides or {})}).start()


def read_values(
    bootstrap: str,
    topic: str,
    isolation: str,
    *,
    partitions: int = 1,
    expect: int | None = None,
    timeout_s: float = 6.0,
) -> list[bytes]:
    """Every value of ``topic`` from the start, read with librdkafka under ``isolation``;
    stops early once ``expect`` values arrived, else reads until ``timeout_s``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and (expect is None or len(values) < expect):
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            values.append(msg.value())
    finally:
        consumer.close()
    return values


def raw_request(bootstrap: str, api_key: int, version: int, **fields: Any) -> Any:
    """Send one request on a fresh connection; the decoded response (fails if the broker
    closes the connection instead of answering)."""
    frame = raw_frame(bootstrap, api_key, version, **fields)
    codec = codec_for(api_key, version)
    response_header = codec.response_cls.__header_schema__  # type: ignore[attr-defined]
    _, offset = entity_reader(response_header)(frame, 0)
    response, _ = entity_reader(codec.response_cls)(frame, offset)
    return response


def raw_frame(bootstrap: str, api_key: int, version: int, **fields: Any) -> bytes:
    """The raw response frame (for responses kio cannot decode, e.g. timestamps of -1)."""
    codec = codec_for(api_key, version)
    header_cls = codec.request_cls.__header_schema__  # type: ignore[attr-defined]
    out = Chunks()
    entity_writer(header_cls)(
        out,
        header_cls(
            request_api_key=api_key, request_api_version=version, correlation_id=42, client_id="t"
        ),
    )
    entity_writer(codec.request_cls)(out, build(codec.request_cls, **fields))
    body = b"".join(out)
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(len(body).to_bytes(4, "big") + body)
        head = s.recv(4, socket.MSG_WAITALL)
        assert len(head) == 4, "broker closed the connection instead of answering"
        return s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
