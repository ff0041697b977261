"""The consumer protocol's bytes as we encode them, read back by us and by aiokafka."""

from __future__ import annotations

import struct

import pytest
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from streamrt.membership.config import MemberConfig, MembershipError
from streamrt.membership.protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_round_trips_the_fields_of_its_version(version: int) -> None:
    data = encode_subscription(
        ["b", "a"],
        owned_partitions=[("a", 2), ("a", 0), ("b", 1)],
        generation_id=7,
        rack_id="r1",
        user_data=b"ud",
        version=version,
    )
    assert struct.unpack_from(">h", data)[0] == version
    decoded = decode_subscription(data)
    assert (decoded.topics, decoded.user_data) == (("a", "b"), b"ud")
    owned = {"a": (0, 2), "b": (1,)} if version >= 1 else {}
    assert decoded.owned_partitions == owned
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("r1" if version >= 3 else None)


def test_aiokafka_reads_what_we_write() -> None:
    metadata = ConsumerProtocolMemberMetadata.decode(encode_subscription(["t"], version=0))
    assert (metadata.subscription, metadata.user_data) == (["t"], None)
    assignment = ConsumerProtocolMemberAssignment.decode(
        encode_assignment([("t", 3), ("t", 1)], user_data=b"x", version=0)
    )
    assert assignment.partitions() == [("t", 1), ("t", 3)]
    assert assignment.user_data == b"x"


def test_assignment_round_trip_and_unknown_version() -> None:
    assert decode_assignment(encode_assignment([("t", 1)])).partitions == {"t": (1,)}
    with pytest.raises(ConsumerProtocolError, match="no version 9"):
        encode_assignment([], version=9)


def test_config_reads_kafka_names_and_refuses_unknown_or_inconsistent_ones() -> None:
    config = MemberConfig.from_config(
        {
            "bootstrap.servers": "h:9092",
            "group.id": "g",
            "group.instance.id": "i",
            "session.timeout.ms": "6000",
            "rebalance.protocol": "cooperative",
            "security.protocol": "PLAINTEXT",
        }
    )
    assert (config.static, config.session_timeout_ms) == (True, 6000)
    assert config.security == {"security.protocol": "PLAINTEXT"}
    with pytest.raises(MembershipError, match=r"unknown group member setting 'group\.idd'"):
        MemberConfig.from_config({"bootstrap.servers": "h:1", "group.idd": "g"})
    with pytest.raises(MembershipError, match="'eager' or 'cooperative'"):
        MemberConfig("h:1", "g", rebalance_protocol="sticky")  # type: ignore[arg-type]
    with pytest.raises(MembershipError, match=r"heartbeat.interval.ms \(9000\) must be lower"):
        MemberConfig("h:1", "g", session_timeout_ms=6000, heartbeat_interval_ms=9000)
