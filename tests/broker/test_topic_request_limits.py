"""Kafka's per-request bounds on CreateTopics and CreatePartitions, through confluent-kafka's
AdminClient: more than 10,000 partitions in one CreateTopics, or more than 10,000 metadata
records in one operation, is POLICY_VIOLATION for the whole request (KRaft's
``MAX_PARTITIONS_PER_BATCH`` and ``MAX_RECORDS_PER_USER_OP``). ``validate_only`` keeps the
accepted cases from creating thousands of partition logs."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic

_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
_TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


def _admin(b: BrokerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap})


def _errors(futures: dict[str, Any]) -> dict[str, tuple[int, str] | None]:
    """topic -> (error code, message), or None where the topic was accepted."""
    out: dict[str, tuple[int, str] | None] = {}
    for name, future in futures.items():
        try:
            future.result(timeout=60)
            out[name] = None
        except KafkaException as exc:
            err = exc.args[0]
            out[name] = (err.code(), err.str())
    return out


def _create(b: BrokerThread, topics: dict[str, int]) -> dict[str, tuple[int, str] | None]:
    new = [NewTopic(name, n, 1) for name, n in topics.items()]
    admin = _admin(b)  # kept alive until the answers are in
    return _errors(admin.create_topics(new, validate_only=True, request_timeout=60))


@pytest.mark.parametrize(
    ("topics", "message"),
    [
        ({"one": 10_001}, _TOO_MANY_PARTITIONS),
        ({"half": 5_000, "other-half": 5_000, "one-more": 1}, _TOO_MANY_PARTITIONS),
        ({"one": 10_000}, _TOO_MANY_RECORDS),  # 1 topic record + 10,000 partition records
    ],
)
def test_create_topics_over_kafkas_bounds_is_a_policy_violation(
    broker: BrokerThread, topics: dict[str, int], message: str
) -> None:
    errors = _create(broker, topics)
    assert errors == {name: (KafkaError.POLICY_VIOLATION, message) for name in topics}


def test_create_topics_up_to_the_bound_is_accepted(broker: BrokerThread) -> None:
    assert _create(broker, {"big": 9_999}) == {"big": None}
    assert _create(broker, {"a": 4_999, "b": 4_999}) == {"a": None, "b": None}


def test_create_partitions_adding_more_than_10000_is_a_policy_violation(
    broker: BrokerThread, topic_name: str
) -> None:
    create_topic(broker.bootstrap, topic_name)
    admin = _admin(broker)

    def grow(total: int) -> tuple[int, str] | None:
        futures = admin.create_partitions(
            [NewPartitions(topic_name, total)], validate_only=True, request_timeout=60
        )
        return _errors(futures)[topic_name]

    assert grow(1 + 10_001) == (KafkaError.POLICY_VIOLATION, _TOO_MANY_RECORDS)
    assert grow(1 + 10_000) is None
