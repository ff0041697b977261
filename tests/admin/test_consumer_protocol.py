"""Decoding member metadata and assignments as real consumers encode them."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from kio.schema.consumer_protocol_subscription.v3.data import ConsumerProtocolSubscription
from kio.serial import entity_writer

from streamrt.admin.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from streamrt.wire.codec import Chunks, build


def test_aiokafka_subscription_and_assignment() -> None:
    metadata = ConsumerProtocolMemberMetadata(0, ["orders", "users"], b"ud").encode()
    assignment = ConsumerProtocolMemberAssignment(
        0, [("orders", [2, 0]), ("users", [1])], b""
    ).encode()

    subscription = decode_subscription(metadata)
    assert subscription.topics == ("orders", "users")
    assert subscription.user_data == b"ud"
    assert subscription.generation_id == -1
    assert decode_assignment(assignment).partitions == {"orders": (0, 2), "users": (1,)}


def _subscription_v3() -> bytes:
    out = Chunks()
    write: Any = entity_writer(ConsumerProtocolSubscription)
    subscription = build(
        ConsumerProtocolSubscription,
        topics=["orders"],
        user_data=None,
        owned_partitions=[{"topic": "orders", "partitions": [3]}],
        generation_id=7,
        rack_id="rack-a",
    )
    write(out, subscription)
    return b"".join(out)


def test_java_style_v3_subscription() -> None:
    decoded = decode_subscription(struct.pack(">h", 3) + _subscription_v3())
    assert decoded.owned_partitions == {"orders": (3,)}
    assert (decoded.version, decoded.generation_id, decoded.rack_id) == (3, 7, "rack-a")


def test_a_newer_version_is_read_with_the_newest_known_schema() -> None:
    decoded = decode_subscription(struct.pack(">h", 9) + _subscription_v3() + b"future")
    assert decoded.version == 9
    assert decoded.topics == ("orders",)
    assert decoded.generation_id == 7


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xff", b"\x00\x00\x00\x00\x00\x05ab"])
def test_garbage_is_a_consumer_protocol_error(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(data)
