"""The length pre-pass (issue 42): it passes every valid request of every served schema, and
it names each kind of lying length before kio would allocate for it."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from kio.serial import entity_writer
from kio.static.primitive import Records

from streamrt.broker.embedded import BrokerThread
from streamrt.broker.handlers import build_api_table
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import Chunks, codec_for
from streamrt.wire.frame_check import FrameLengthError, check_request_lengths
from tests.broker.subprocess_broker import request_header, uvarint

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))


def _frame(api_key: int, version: int, request: object) -> bytes:
    cls = codec_for(api_key, version).request_cls
    out = Chunks()
    try:
        entity_writer(cls)(out, request)
    except ValueError:  # kio's strategies can draw a timedelta its writer cannot encode
        reject()
    flexible = cls.__flexible__  # type: ignore[attr-defined]
    return request_header(api_key, version, b"c", flexible) + b"".join(out)


def test_valid_requests_of_every_served_schema_pass_and_decode(broker: BrokerThread) -> None:
    """No false refusal: kio-encoded requests (a few per schema) pass the check and kio reads
    them to their last byte."""
    assert broker.broker is not None and broker.broker.core is not None
    served = [
        (key, version)
        for key, lo, hi in build_api_table(broker.broker.core).ranges()
        for version in range(lo, hi + 1)
    ]

    @settings(
        max_examples=len(served) * 2,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def valid_frames_pass(data: st.DataObject) -> None:
        api_key, version = data.draw(st.sampled_from(served))
        codec = codec_for(api_key, version)
        frame = _frame(api_key, version, data.draw(st.from_type(codec.request_cls)))
        check_request_lengths(frame, codec.request_cls)
        _, offset = codec.read_header(frame, 0)
        _, size = codec.read_body(frame, offset)
        assert offset + size == len(frame)

    valid_frames_pass()


_META12 = codec_for(ApiKey.METADATA, 12).request_cls
_HEAD12 = request_header(ApiKey.METADATA, 12, b"c", True)
_TOPIC = bytes(16) + uvarint(3) + b"ab" + b"\x00"  # topic id, compact "ab", no tags
_FETCH15 = codec_for(ApiKey.FETCH, 15).request_cls


@pytest.mark.parametrize(
    ("cls", "frame", "says"),
    [
        (_META12, _HEAD12 + uvarint(2**32), "array of 4294967295"),
        (_META12, _HEAD12 + uvarint(3) + _TOPIC, "array of 2"),  # 2 topics, 1 sent
        (_META12, _HEAD12 + uvarint(2) + bytes(16) + uvarint(2**32), "string or bytes of"),
        (_META12, _HEAD12 + uvarint(1) + b"\x00\x00" + uvarint(2**20), "tagged-field section"),
        (_META12, _HEAD12 + uvarint(1) + b"\x00\x00\x01\x07" + uvarint(2**20), "tagged field 7"),
        (
            codec_for(ApiKey.METADATA, 4).request_cls,
            request_header(ApiKey.METADATA, 4, b"c", False) + struct.pack(">ih", 1, 0x7FFF),
            "string or bytes of 32767",
        ),
        (
            codec_for(ApiKey.METADATA, 4).request_cls,
            request_header(ApiKey.METADATA, 4, b"c", False) + struct.pack(">i", -7),
            "negative length -7",
        ),
        (_META12, struct.pack(">hhih", 3, 12, 1, 0x7000), "string or bytes of 28672"),
        (_META12, _HEAD12 + b"\x80\x80\x80\x80\x80\x01", "longer than 5 bytes"),
        (
            codec_for(ApiKey.DELETE_TOPICS, 6).request_cls,
            request_header(ApiKey.DELETE_TOPICS, 6, b"c", True) + b"\x00" + bytes(5),
            "null array",  # topics is not nullable
        ),
        (
            # Fetch v15's known tag 1 (replica_state) is walked within its own 13 bytes: its
            # inner tag count 5 fits the frame (20 more bytes) but not the tag's value
            _FETCH15,
            request_header(ApiKey.FETCH, 15, b"c", True)
            + bytes(21)  # max_wait .. session_epoch
            + b"\x01\x01\x01"  # no topics, no forgotten topics, rack ""
            + b"\x01\x01\x0d"  # one tag: tag 1, 13 bytes
            + bytes(12)  # replica id, replica epoch
            + b"\x05"  # 5 inner tags in 0 bytes
            + bytes(20),
            "tagged-field section of 5",
        ),
    ],
    ids=[
        "compact-array-2^32",
        "array-short-by-one-element",
        "compact-string-2^32",
        "tag-count",
        "tag-size",
        "int16-string",
        "negative-int32-count",
        "header-client-id",
        "varint-too-long",
        "null-for-non-nullable-array",
        "known-tag-size",
    ],
)
def test_each_kind_of_lying_length_is_named(cls: type, frame: bytes, says: str) -> None:
    with pytest.raises(FrameLengthError, match=says):
        check_request_lengths(frame, cls)
