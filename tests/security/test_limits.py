"""Connection and size limits with Kafka's names, attacked with raw frames and real clients:
``sasl.server.max.receive.size``, ``max.connections``, ``max.connections.per.ip``,
``connections.max.idle.ms`` and ``fetch.max.bytes``."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer

from streamrt.admin.connection import BrokerConnection
from streamrt.client_config import ClientConfig
from streamrt.wire.api_keys import ApiKey
from tests.kafka_helpers import create_topic
from tests.security.authz_model import batch
from tests.security.conftest import USERS, address


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def _api_versions(s: socket.socket) -> bytes | None:
    """ApiVersions v0; the answer's payload, or None when the broker closed the connection."""
    body = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 7, 1) + b"x"
    try:
        s.sendall(len(body).to_bytes(4, "big") + body)
        head = s.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return None
        return s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
    except (ConnectionResetError, BrokenPipeError, TimeoutError):
        return None


def _closed(s: socket.socket, within: float = 5.0) -> bool:
    s.settimeout(within)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_pre_auth_frames_capped_by_sasl_server_max_receive_size(secure_broker) -> None:
    """Before SASL completes, a 600 KiB frame header closes the connection at once (Kafka's
    512 KiB default); the same header on PLAINTEXT waits for its body
    (socket.request.max.bytes, 100 MiB)."""
    sasl = _connect(address(secure_broker, "SASL_PLAINTEXT"))
    sasl.sendall((600 * 1024).to_bytes(4, "big"))
    assert _closed(sasl)
    plain = _connect(address(secure_broker, "PLAINTEXT"))
    plain.sendall((600 * 1024).to_bytes(4, "big"))
    assert not _closed(plain, within=1.0)
    for s in (sasl, plain):
        s.close()


def test_authenticated_sasl_connection_sends_large_frames(secure_broker) -> None:
    """After the login the cap is socket.request.max.bytes again: a 700 KB record goes in."""
    cfg = ClientConfig.from_properties(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": USERS["alice"],
        }
    )
    topic = f"big-{uuid.uuid4().hex[:6]}"

    async def run() -> int:
        producer = AIOKafkaProducer(
            bootstrap_servers=address(secure_broker, "SASL_PLAINTEXT"),
            max_request_size=2 << 20,
            **cfg.aiokafka_producer_kwargs(),
        )
        await producer.start()
        try:
            meta = await producer.send_and_wait(topic, b"x" * 700_000)
            return meta.offset
        finally:
            await producer.stop()

    assert asyncio.run(run()) == 0


@pytest.mark.parametrize("name", ["max.connections", "max.connections.per.ip"])
def test_connection_limits(broker_factory, name: str) -> None:
    """The third connection is closed at once; when one closes, a new one is served."""
    b = broker_factory({name: "2"})
    first, second = _connect(b.bootstrap), _connect(b.bootstrap)
    assert _api_versions(first) is not None and _api_versions(second) is not None
    third = _connect(b.bootstrap)
    assert _closed(third)
    third.close()
    first.close()
    deadline = time.monotonic() + 5
    while True:  # the broker notices the close asynchronously
        fourth = _connect(b.bootstrap)
        answered = _api_versions(fourth) is not None
        fourth.close()
        if answered or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert answered
    assert _api_versions(second) is not None
    second.close()


def test_idle_connections_closed_after_connections_max_idle_ms(broker_factory) -> None:
    b = broker_factory({"connections.max.idle.ms": "400"})
    idle, busy = _connect(b.bootstrap), _connect(b.bootstrap)
    assert _api_versions(idle) is not None
    for _ in range(8):  # 1.6 s of requests 0.2 s apart: never idle for 0.4 s
        assert _api_versions(busy) is not None
        time.sleep(0.2)
    assert _closed(idle, within=1.0)
    assert _api_versions(busy) is not None
    idle.close()
    busy.close()


def test_connections_max_idle_ms_accepted_by_default_broker(broker) -> None:
    """Known config (was refused as unknown); Kafka's default is 10 minutes."""

    async def describe() -> str:
        host, port = broker.bootstrap.rsplit(":", 1)
        conn = await BrokerConnection.open(host, int(port))
        try:
            resp = await conn.call(
                ApiKey.DESCRIBE_CONFIGS,
                resources=[
                    {
                        "resource_type": 4,
                        "resource_name": "0",
                        "configuration_keys": ["connections.max.idle.ms"],
                    }
                ],
                include_synonyms=False,
                include_documentation=False,
            )
            return str(resp.results[0].configs[0].value)
        finally:
            await conn.close()

    assert asyncio.run(describe()) == "600000"


def _fetch_size(bootstrap: str, topic: str, max_bytes: int) -> int:
    """Record bytes in one Fetch of partitions 0-9 from offset 0."""

    async def run() -> int:
        host, port = bootstrap.rsplit(":", 1)
        conn = await BrokerConnection.open(host, int(port))
        try:
            parts = [
                {
                    "partition": p,
                    "current_leader_epoch": -1,
                    "fetch_offset": 0,
                    "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                    "partition_max_bytes": 10 << 20,
                }
                for p in range(10)
            ]
            resp = await conn.call(
                ApiKey.FETCH,
                cluster_id=None,
                replica_id=-1,
                max_wait=0,
                min_bytes=0,
                max_bytes=max_bytes,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[{"topic": topic, "partitions": parts}],
                forgotten_topics_data=[],
                rack_id="",
            )
            return sum(len(p.records or b"") for p in resp.responses[0].partitions)
        finally:
            await conn.close()

    return asyncio.run(run())


def test_fetch_honours_fetch_max_bytes(broker_factory) -> None:
    """Ten partitions of one ~30 KB batch each: the broker's fetch.max.bytes (100 KB) caps a
    request asking for 10 MiB; a request asking for less gets less; the first batch always
    comes whole (KIP-74). Without the cap the whole 300 KB comes back."""
    one = _batch(30_000)
    sizes = {}
    for cap in ("100000", str(2**31 - 1)):
        b = broker_factory({"fetch.max.bytes": cap})
        topic = f"fmb-{uuid.uuid4().hex[:6]}"
        create_topic(b.bootstrap, topic, 10)

        async def produce(bootstrap: str = b.bootstrap, topic: str = topic) -> None:
            host, port = bootstrap.rsplit(":", 1)
            conn = await BrokerConnection.open(host, int(port))
            try:
                for p in range(10):
                    data = [{"name": topic, "partition_data": [{"index": p, "records": one}]}]
                    await conn.call(
                        ApiKey.PRODUCE,
                        transactional_id=None,
                        acks=-1,
                        timeout=5000,
                        topic_data=data,
                    )
            finally:
                await conn.close()

        asyncio.run(produce())
        sizes[cap] = [_fetch_size(b.bootstrap, topic, n) for n in (10 << 20, 50_000, 1)]
    assert sizes[str(2**31 - 1)] == [10 * len(one), len(one), len(one)]
    assert sizes["100000"] == [3 * len(one), len(one), len(one)]


def _batch(size: int) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    builder.append(0, timestamp=1_000, key=None, value=b"y" * size, headers=[])
    return bytes(builder.build())


def test_batch_helper_is_a_real_batch() -> None:
    assert len(batch()) > 61  # the v2 header alone is 61 bytes
