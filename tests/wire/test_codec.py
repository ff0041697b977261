"""The wire layer on its own: the ApiKey table, header and body round trips in both directions,
flexible versions, and the version-tolerant entity builder."""

from __future__ import annotations

import datetime
import struct

import pytest
from kio.schema.index import api_key_map, schema_name_map

from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.client_codec import (
    UnsupportedVersionError,
    client_codec,
    kio_versions,
    pick_version,
)
from streamrt.wire.codec import build, codec_for, encode_response, ms


def test_api_key_table_is_kios_table() -> None:
    """Every key Kafka 4.x defines, with Kafka's number and name, and nothing else."""
    assert {int(k): k.schema_name for k in ApiKey} == dict(api_key_map)
    assert ApiKey.API_VERSIONS == 18 and ApiKey.DESCRIBE_TOPIC_PARTITIONS == 75
    assert ApiKey(21).name == "DELETE_RECORDS"


@pytest.mark.parametrize("key", list(ApiKey))
def test_every_api_key_has_request_and_response_schemas(key: ApiKey) -> None:
    versions = kio_versions(key)
    assert list(versions) == sorted(schema_name_map[key.schema_name])
    for v in (versions.start, versions.stop - 1):
        codec = codec_for(key, v)
        assert codec.request_cls.__api_key__ == key  # type: ignore[attr-defined]
        assert codec.response_cls.__version__ == v  # type: ignore[attr-defined]


def _client_frame_to_broker(key: ApiKey, version: int, **fields: object) -> tuple[object, object]:
    """Encode with the client side, decode with the broker side: (header, body)."""
    cc = client_codec(key, version)
    request = build(cc.request_cls, **fields)
    frame = cc.encode_request(1234, "wire-test", request)
    size = struct.unpack_from(">i", frame)[0]
    assert size == len(frame) - 4
    payload = frame[4:]
    assert struct.unpack_from(">hhi", payload) == (key, version, 1234)
    bc = codec_for(key, version)
    header, offset = bc.read_header(payload, 0)
    body, end = bc.read_body(payload, offset)
    assert offset + end == len(payload)
    assert body == request
    return header, body


@pytest.mark.parametrize(("version", "flexible"), [(4, False), (9, True), (12, True)])
def test_request_header_v1_and_v2_round_trip(version: int, flexible: bool) -> None:
    header, body = _client_frame_to_broker(
        ApiKey.METADATA,
        version,
        topics=[{"name": "t", "topic_id": None}],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    assert header.client_id == "wire-test"  # type: ignore[attr-defined]
    assert header.correlation_id == 1234  # type: ignore[attr-defined]
    assert type(header).__version__ == (2 if flexible else 1)  # type: ignore[attr-defined]
    assert body.__flexible__ is flexible  # type: ignore[attr-defined]


@pytest.mark.parametrize(("key", "version"), [(ApiKey.METADATA, 12), (ApiKey.FETCH, 4)])
def test_response_round_trips_from_broker_to_client(key: ApiKey, version: int) -> None:
    response = build(
        codec_for(key, version).response_cls,
        throttle_time=5,
        error_code=0,
        session_id=0,
        responses=[],
        brokers=[{"node_id": 0, "host": "h", "port": 9092, "rack": None}],
        cluster_id="c",
        controller_id=0,
        topics=[],
        cluster_authorized_operations=-(2**31),
    )
    payload = b"".join(encode_response(codec_for(key, version), 99, response))
    assert struct.unpack_from(">i", payload)[0] == 99
    assert client_codec(key, version).decode_response(payload) == response


def test_api_versions_response_header_is_always_v0() -> None:
    """KIP-511: even the flexible ApiVersions v3 answers with response header v0 (no tags)."""
    codec = codec_for(ApiKey.API_VERSIONS, 3)
    response = build(
        codec.response_cls,
        error_code=0,
        api_keys=[{"api_key": 18, "min_version": 0, "max_version": 4}],
        throttle_time=0,
    )
    payload = b"".join(encode_response(codec, 7, response))
    # correlation id, then immediately the error code: no tagged-field byte in the header
    assert struct.unpack_from(">ih", payload) == (7, 0)
    assert client_codec(ApiKey.API_VERSIONS, 3).decode_response(payload) == response


def test_flexible_compact_strings_differ_from_legacy_strings() -> None:
    legacy = client_codec(ApiKey.FIND_COORDINATOR, 2)
    flexible = client_codec(ApiKey.FIND_COORDINATOR, 3)
    a = legacy.encode_request(1, "c", build(legacy.request_cls, key="grp", key_type=0))
    b = flexible.encode_request(1, "c", build(flexible.request_cls, key="grp", key_type=0))
    assert b"\x00\x03grp" in a  # INT16 length
    assert b"\x04grp" in b  # unsigned varint length + 1


def test_build_converts_ms_errors_nested_entities_and_drops_unknown_fields() -> None:
    cls = codec_for(ApiKey.JOIN_GROUP, 5).response_cls
    entity = build(
        cls,
        throttle_time=250,
        error_code=ErrorCode.member_id_required.value,
        generation_id=-1,
        protocol_name="",
        leader="",
        member_id="m",
        members=[{"member_id": "m", "group_instance_id": None, "metadata": b"x"}],
        field_from_a_newer_version="ignored",
    )
    assert entity.throttle_time == datetime.timedelta(milliseconds=250)  # type: ignore[attr-defined]
    assert entity.error_code is ErrorCode.member_id_required  # type: ignore[attr-defined]
    assert entity.members[0].metadata == b"x"  # type: ignore[attr-defined]
    assert ms(entity.throttle_time) == 250 and ms(None) == -1  # type: ignore[attr-defined]


def test_pick_version_takes_the_highest_common_version() -> None:
    broker = {int(ApiKey.LEAVE_GROUP): (0, 5), int(ApiKey.METADATA): (0, 99)}
    assert pick_version(broker, ApiKey.LEAVE_GROUP) == 5
    assert pick_version(broker, ApiKey.LEAVE_GROUP, max_version=2) == 2
    assert pick_version(broker, ApiKey.METADATA) == kio_versions(ApiKey.METADATA).stop - 1
    with pytest.raises(UnsupportedVersionError, match="needs v6"):
        pick_version(broker, ApiKey.LEAVE_GROUP, min_version=6)
    with pytest.raises(UnsupportedVersionError, match="does not support"):
        pick_version(broker, ApiKey.DELETE_RECORDS)


def test_admin_still_exports_the_moved_client_helpers() -> None:
    from streamrt.admin import connection

    assert connection.client_codec is client_codec
    assert connection.UnsupportedVersionError is UnsupportedVersionError
