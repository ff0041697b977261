"""Differential: the lying batches of issue 29 get the same answer from both brokers.

A valid-CRC batch that claims more records than it holds (2^31-1, or one more), or fewer,
is refused with INVALID_RECORD by Apache Kafka's ``LogValidator`` and by streamrt's
validator, and the partition's end offset does not move.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest

from tests.apache_kafka.support import BrokerEndpoint, create_topic, error_name
from tests.broker.batches import batch, lie_count
from tests.broker.raw_produce import RawProducer


@pytest.mark.parametrize(
    ("values", "claimed"),
    [([b"a"], 2**31 - 1), ([b"a", b"b"], 3), ([b"a", b"b", b"c"], 2)],
    ids=["claims-2^31-1", "claims-one-more", "claims-one-fewer"],
)
def test_lying_record_count_is_invalid_record(
    any_broker: BrokerEndpoint, values: list[bytes], claimed: int
) -> None:
    topic = f"lies-{uuid.uuid4().hex[:8]}"
    create_topic(any_broker.bootstrap, topic, 1)
    with RawProducer(any_broker.bootstrap) as p:
        code = _until_led(lambda: p.produce(topic, 0, bytes(lie_count(batch(values), claimed))))
        assert error_name(code) == "INVALID_RECORD"
        assert p.produce(topic, 0, bytes(batch([b"ok"]))) == (0, 0)


_NOT_YET = {"NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE"}


def _until_led(send: Callable[[], tuple[int, int]], timeout: float = 15.0) -> int:
    """The answer's error code once the broker leads the new partition: Apache Kafka's broker
    can still answer NOT_LEADER for a moment after the metadata shows it as leader."""
    deadline = time.monotonic() + timeout
    code, _ = send()
    while error_name(code) in _NOT_YET and time.monotonic() < deadline:
        time.sleep(0.1)
        code, _ = send()
    return code
