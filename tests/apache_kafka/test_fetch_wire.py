"""Differential: how long a Fetch is held, on the wire, on both brokers.

A Kafka consumer's ``close()`` ends its fetch session with a Fetch that names no partitions
(session epoch -1) and waits for the answer. Apache Kafka answers it at once; our broker used to
hold it for ``max_wait`` like an empty long poll, which made every consumer close 0.5 s slower
(docs/apache-kafka.md, "Differences found"). A Fetch that does name partitions is still held.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from streamrt.admin.cluster import Cluster
from tests.apache_kafka.support import BrokerEndpoint, create_topic, error_name, run
from tests.kafka_helpers import wait_until

FETCH = 1
FINAL_EPOCH = -1


async def _fetch(bootstrap: str, topics: list[dict[str, Any]], max_wait_ms: int) -> Any:
    cluster = Cluster(
        bootstrap, client_id="raw-fetch", request_timeout=30, api_timeout=30, retry_backoff=0.1
    )
    try:
        conn = await cluster.any_broker()
        return await conn.call(
            FETCH,
            min_version=12,
            max_version=12,
            replica_id=-1,
            max_wait=max_wait_ms,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=FINAL_EPOCH if not topics else 0,
            topics=topics,
            forgotten_topics_data=[],
            rack_id="",
            # far below max_wait: a held request times out here instead of being answered
            response_timeout=10 if max_wait_ms > 10_000 else None,
        )
    finally:
        await cluster.close()


def test_closing_fetch_with_no_partitions_is_answered_at_once(any_broker: BrokerEndpoint) -> None:
    """The close-session Fetch (no partitions, epoch -1) with max_wait 60 s gets an empty
    answer without waiting: both brokers answer well inside the 10 s response timeout."""
    response = run(_fetch(any_broker.bootstrap, [], 60_000))
    assert error_name(response.error_code) == "NONE"
    assert list(response.responses) == []


def test_fetch_at_the_log_end_is_still_held_for_max_wait(any_broker: BrokerEndpoint) -> None:
    topic = f"held-{uuid.uuid4().hex[:8]}"
    create_topic(any_broker.bootstrap, topic, 1)
    partition = {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": 0,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    topics = [{"topic": topic, "partitions": [partition]}]

    def served() -> bool:  # a broker serves a new partition a moment after it is created
        parts = [
            p for t in run(_fetch(any_broker.bootstrap, topics, 0)).responses for p in t.partitions
        ]
        return [error_name(p.error_code) for p in parts] == ["NONE"]

    wait_until(served, 30, what=f"{topic} served")
    started = time.monotonic()
    response = run(_fetch(any_broker.bootstrap, topics, 1500))
    held = time.monotonic() - started
    parts = [p for t in response.responses for p in t.partitions]
    assert [(error_name(p.error_code), bytes(p.records or b"")) for p in parts] == [("NONE", b"")]
    assert held >= 1.2  # nothing to read: answered when max_wait ran out, not before
