"""Differential: issue 29's input-hardening answers, on the wire, on both brokers.

A client Produce to ``__consumer_offsets`` is INVALID_TOPIC_EXCEPTION; unknown tagged fields
are ignored; an empty ``cleanup.policy`` is accepted; topic names of 249 characters work and
250 is INVALID_TOPIC_EXCEPTION.
"""

from __future__ import annotations

import uuid
from typing import Any

from streamrt.admin.cluster import Cluster
from tests.apache_kafka.support import BrokerEndpoint, error_name, run
from tests.broker.test_unknown_tags import _decoded, _frame, _send, _with_tags
from tests.kafka_helpers import wait_until
from tests.security.authz_model import batch

PRODUCE, METADATA, FIND_COORDINATOR, CREATE_TOPICS = 0, 3, 10, 19


async def _call(bootstrap: str, api_key: int, **fields: Any) -> Any:
    cluster = Cluster(
        bootstrap, client_id="hardening", request_timeout=30, api_timeout=30, retry_backoff=0.1
    )
    try:
        conn = await cluster.any_broker()
        return await conn.call(api_key, **fields)
    finally:
        await cluster.close()


def _offsets_topic_exists(bootstrap: str) -> bool:
    run(_call(bootstrap, FIND_COORDINATOR, key_type=0, coordinator_keys=["hardening"]))
    meta = run(
        _call(
            bootstrap,
            METADATA,
            topics=[{"name": "__consumer_offsets", "topic_id": None}],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )
    return error_name(meta.topics[0].error_code) == "NONE"


def test_produce_to_consumer_offsets_is_refused(any_broker: BrokerEndpoint) -> None:
    wait_until(lambda: _offsets_topic_exists(any_broker.bootstrap), 60, what="__consumer_offsets")
    data = [{"name": "__consumer_offsets", "partition_data": [{"index": 0, "records": batch()}]}]
    resp = run(
        _call(
            any_broker.bootstrap,
            PRODUCE,
            max_version=12,  # v13 names topics by id
            transactional_id=None,
            acks=-1,
            timeout=5000,
            topic_data=data,
        )
    )
    codes = [error_name(p.error_code) for t in resp.responses for p in t.partition_responses]
    assert codes == ["INVALID_TOPIC_EXCEPTION"]


def test_unknown_tagged_fields_are_ignored(any_broker: BrokerEndpoint) -> None:
    topic = f"tags-{uuid.uuid4().hex[:6]}"
    plain = _send(any_broker.bootstrap, _frame(topic))
    tagged = _send(any_broker.bootstrap, _with_tags(_frame(topic), topic))
    assert plain is not None and tagged is not None
    assert _decoded(tagged) == _decoded(plain)


def _create(bootstrap: str, name: str, configs: list[dict[str, str]]) -> str:
    resp = run(
        _call(
            bootstrap,
            CREATE_TOPICS,
            topics=[
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": -1,
                    "assignments": [],
                    "configs": configs,
                }
            ],
            timeout=30000,
            validate_only=False,
        )
    )
    return error_name(resp.topics[0].error_code)


def test_empty_cleanup_policy_is_accepted(any_broker: BrokerEndpoint) -> None:
    name = f"keep-{uuid.uuid4().hex[:6]}"
    assert _create(any_broker.bootstrap, name, [{"name": "cleanup.policy", "value": ""}]) == "NONE"


def test_topic_name_length_limit(any_broker: BrokerEndpoint) -> None:
    tag = uuid.uuid4().hex[:6]
    assert _create(any_broker.bootstrap, tag + "x" * (249 - len(tag)), []) == "NONE"
    assert _create(any_broker.bootstrap, tag + "y" * (250 - len(tag)), []) == (
        "INVALID_TOPIC_EXCEPTION"
    )
