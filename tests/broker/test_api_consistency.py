"""Issue 16: what ApiVersions advertises matches what is served, and unknown keys/versions are
answered as Kafka answers them (raw sockets, no client library in between)."""

from __future__ import annotations

import asyncio
import socket
import struct

from kafka.protocol.broker_version_data import (
    BROKER_API_VERSIONS,
    infer_broker_version_from_api_versions,
)

from streamrt.admin.connection import BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.wire.api_keys import ApiKey

#: APIs a Kafka 4.0 broker advertises that this one deliberately does not, with Kafka's reason.
NOT_ADVERTISED = {
    ApiKey.WRITE_TXN_MARKERS: "inter-broker: only a transaction coordinator sends it to "
    "partition leaders; this node's coordinator writes its markers in-process",
}

#: Advertised APIs whose every request gets Kafka's answer for a disabled feature, which is
#: UNSUPPORTED_VERSION in the response body (a served answer, not a closed connection).
DISABLED_FEATURES = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: "group.coordinator.rebalance.protocols without consumer",
    ApiKey.CONSUMER_GROUP_DESCRIBE: "group.coordinator.rebalance.protocols without consumer",
    ApiKey.ADD_RAFT_VOTER: "static quorum: kraft.version 0",
    ApiKey.REMOVE_RAFT_VOTER: "static quorum: kraft.version 0",
}


def _advertised(port: int) -> dict[int, tuple[int, int]]:
    async def scenario() -> dict[int, tuple[int, int]]:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            return dict(conn.broker_versions)
        finally:
            await conn.close()

    return asyncio.run(scenario())


def _frame(api_key: int, version: int, correlation_id: int, body: bytes = b"") -> bytes:
    client_id = b"raw"
    payload = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    payload += body
    return len(payload).to_bytes(4, "big") + payload


def _read_frame(s: socket.socket) -> bytes:
    size = int.from_bytes(_recv_exactly(s, 4), "big")
    return _recv_exactly(s, size)


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def test_every_api_of_the_inferred_kafka_version_is_served(broker: BrokerThread) -> None:
    advertised = _advertised(broker.port)
    inferred = infer_broker_version_from_api_versions(advertised)
    assert inferred == (4, 0)
    kafka = BROKER_API_VERSIONS[inferred]  # a real Kafka 4.0 broker's ApiVersions answer
    missing = {ApiKey(k) for k in kafka if k not in advertised}
    assert missing == set(NOT_ADVERTISED), missing - set(NOT_ADVERTISED)
    # every advertised API is routed (the table test checks routing = advertising); the ones
    # answering only UNSUPPORTED_VERSION are documented Kafka configurations
    assert set(DISABLED_FEATURES) <= set(advertised)
    # telemetry (KIP-714) is advertised by Kafka only with a metrics reporter plugin, as here
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in advertised
    assert ApiKey.PUSH_TELEMETRY not in advertised


def test_too_new_api_versions_gets_a_v0_answer_with_unsupported_version(
    broker: BrokerThread,
) -> None:
    advertised = _advertised(broker.port)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        s.sendall(_frame(ApiKey.API_VERSIONS, 99, 7))
        resp = _read_frame(s)
        correlation_id, error_code, count = struct.unpack_from(">ihi", resp)
        assert (correlation_id, error_code) == (7, 35)  # UNSUPPORTED_VERSION
        ranges = {}
        for i in range(count):
            key, lo, hi = struct.unpack_from(">hhh", resp, 10 + 6 * i)
            ranges[key] = (lo, hi)
        assert ranges == advertised
        # the connection stays usable: a v0 ApiVersions is answered normally
        s.sendall(_frame(ApiKey.API_VERSIONS, 0, 8))
        correlation_id, error_code = struct.unpack_from(">ih", _read_frame(s))
        assert (correlation_id, error_code) == (8, 0)


def test_unsupported_version_or_unknown_key_closes_the_connection(broker: BrokerThread) -> None:
    advertised = _advertised(broker.port)
    _, metadata_max = advertised[ApiKey.METADATA]
    cases = [
        (ApiKey.METADATA, metadata_max + 1),  # a version above the advertised range
        (ApiKey.FETCH, 0),  # below it (Kafka 4.0 removed Fetch v0-3)
        (9999, 0),  # a number Kafka does not define
        (ApiKey.WRITE_TXN_MARKERS, 1),  # defined but not served here
    ]
    for api_key, version in cases:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
            s.sendall(_frame(int(api_key), version, 1, b"\x00" * 8))
            assert s.recv(4) == b"", (api_key, version)
