"""Malformed, truncated, oversized and unsupported frames close one connection; the broker lives."""

from __future__ import annotations

import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import KafkaAdminClient

from streamrt.broker.embedded import BrokerThread
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for

API_VERSIONS = ApiKey.API_VERSIONS


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    return s


def _read_frame(s: socket.socket) -> bytes | None:
    """A response frame, or None when the broker closed the connection."""
    try:
        head = s.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return None
        size = int.from_bytes(head, "big")
        return s.recv(size, socket.MSG_WAITALL)
    except (ConnectionResetError, TimeoutError):
        return None


def _api_versions_frame(version: int, correlation_id: int = 7) -> bytes:
    body = struct.pack(">hhih", API_VERSIONS, version, correlation_id, 4) + b"test"
    if version >= 3:  # flexible header (tagged fields) + compact strings body
        body += b"\x00" + b"\x05test\x041.0\x00"
    return len(body).to_bytes(4, "big") + body


def _alive(bootstrap: str) -> bool:
    s = _connect(bootstrap)
    try:
        s.sendall(_api_versions_frame(0))
        frame = _read_frame(s)
        return frame is not None and frame[:4] == (7).to_bytes(4, "big")
    finally:
        s.close()


def test_api_versions_too_new_gets_v0_error_reply(broker: BrokerThread) -> None:
    s = _connect(broker.bootstrap)
    body = struct.pack(">hhih", API_VERSIONS, 99, 42, 1) + b"x" + b"\x00\x00\x00"
    s.sendall(len(body).to_bytes(4, "big") + body)
    frame = _read_frame(s)
    s.close()
    assert frame is not None
    assert int.from_bytes(frame[:4], "big") == 42
    from kio.serial import entity_reader

    response, _ = entity_reader(codec_for(API_VERSIONS, 0).response_cls)(frame, 4)
    assert response.error_code == 35  # UNSUPPORTED_VERSION
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert keys[0] == (3, 12) and keys[1] == (4, 12)


def test_oversized_frame_closes_only_that_connection(broker_factory) -> None:
    b = broker_factory({"socket.request.max.bytes": "1024"})
    bystander = _connect(b.bootstrap)
    s = _connect(b.bootstrap)
    s.sendall((10_000_000).to_bytes(4, "big") + b"\x00" * 16)
    assert _read_frame(s) is None
    s.close()
    bystander.sendall(_api_versions_frame(0))
    assert _read_frame(bystander) is not None
    bystander.close()
    assert _alive(b.bootstrap)


def test_truncated_and_garbage_frames(broker: BrokerThread) -> None:
    cases = [
        b"\x00\x00\x00\x02\x00\x12",  # shorter than a header
        b"\xff\xff\xff\xff",  # negative size
        struct.pack(">ihhi", 8, 999, 0, 1),  # unknown API key
        struct.pack(">ihhi", 8, 3, 99, 1),  # unsupported Metadata version
        struct.pack(">ihhih", 10, 3, 12, 1, 200),  # client id longer than the frame
    ]
    for raw in cases:
        s = _connect(broker.bootstrap)
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
        assert _read_frame(s) is None
        s.close()
    assert _alive(broker.bootstrap)


def test_partial_frame_then_disconnect(broker: BrokerThread) -> None:
    s = _connect(broker.bootstrap)
    s.sendall((100).to_bytes(4, "big") + b"\x00\x03")
    s.close()
    assert _alive(broker.bootstrap)


def test_unknown_topic_errors_not_crashes(broker_factory) -> None:
    b = broker_factory({"auto.create.topics.enable": "false"})
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        md = admin.describe_topics(["nope"])
        assert md[0]["error_code"] == 3
    finally:
        admin.close()
    assert _alive(b.bootstrap)


def _valid_frames() -> list[bytes]:
    """Real request frames to mutate: Metadata v12 and Produce v9 of a tiny batch."""
    frames = []
    meta = codec_for(3, 12)
    req = build(
        meta.request_cls,
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    from streamrt.wire.codec import Chunks

    out = Chunks()
    meta.request_cls.__header_schema__  # noqa: B018 - header class exists
    hdr_cls = meta.request_cls.__header_schema__
    from kio.serial import entity_writer

    entity_writer(hdr_cls)(
        out, hdr_cls(request_api_key=3, request_api_version=12, correlation_id=1, client_id="fuzz")
    )
    entity_writer(meta.request_cls)(out, req)
    frames.append(b"".join(out))
    return frames


_SEEDS = _valid_frames()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.sampled_from(_SEEDS),
    flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=6),
    cut=st.integers(0, 400),
    garbage=st.binary(max_size=64),
)
def test_fuzz_mutated_frames_never_kill_the_broker(
    fuzz_broker: BrokerThread, seed: bytes, flips, cut: int, garbage: bytes
) -> None:
    frame = bytearray(seed)
    for pos, val in flips:
        if pos < len(frame):
            frame[pos] = val
    frame = frame[: max(cut, 8)] + garbage
    s = _connect(fuzz_broker.bootstrap)
    try:
        s.sendall(len(frame).to_bytes(4, "big") + bytes(frame))
        s.shutdown(socket.SHUT_WR)
        _read_frame(s)
    finally:
        s.close()
    assert _alive(fuzz_broker.bootstrap)
