"""A restarted exactly-once thread's producer settles the transaction its killed predecessor
left open before librdkafka's ``init_transactions``, so librdkafka's first InitProducerId is
answered at once instead of being retried on its fixed 500 ms timer (txn_settle.py)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import confluent_kafka
import pytest

from streamrt.admin.client import AdminClient
from streamrt.runtime import App
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.clients import ClientFactory
from streamrt.runtime.engine.env import ThreadEnv
from tests.kafka_helpers import create_topic
from tests.runtime.eos_support import read_committed

APP = "settle"
TXN_ID = f"{APP}-i-1-thread-1"  # what a static thread's transactional.id looks like


def crashed_producer(bootstrap: str, topic: str) -> confluent_kafka.Producer:
    """A producer that began a transaction, wrote to ``topic`` and then "died": it is never
    committed, aborted or closed while the test runs (the caller keeps the object)."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": TXN_ID, "log_level": 0}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"from the killed incarnation")
    assert producer.flush(30) == 0
    return producer


def successor(bootstrap: str) -> Any:
    """The restarted thread's transactional producer, as a stream thread builds it."""
    config = StreamsConfig.from_mapping(
        {
            "application.id": APP,
            "bootstrap.servers": bootstrap,
            "processing.guarantee": "exactly_once_v2",
        }
    )
    app = App({"application.id": APP})
    app.stream("settle-in").to("settle-out")
    subs = tuple(app.topology.subtopologies(APP))
    env = ThreadEnv(config, app.topology, subs, "i-1", True, lambda *_a, **_kv: None)
    no_metadata: Any = lambda: None  # noqa: E731  (no offsets are sent to the transaction)
    return ClientFactory(env, f"{APP}-i-1-thread-1", "i-1-1", TXN_ID, no_metadata).thread_producer()


def test_the_successor_does_not_wait_for_librdkafkas_pid_retry(
    broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    create_topic(broker.bootstrap, "settle-out", 1)
    dead = crashed_producer(broker.bootstrap, "settle-out")
    producer = successor(broker.bootstrap)

    async def restart() -> None:
        await producer.start()
        try:
            producer.begin()
            assert producer.produce("settle-out", b"k", b"from the successor", 0, 1, None)
            await producer.flush()
            await producer.commit()
        finally:
            await producer.stop()

    with caplog.at_level(logging.INFO):
        asyncio.run(restart())
    # the old transaction was fenced and aborted before init_transactions was sent: its
    # InitProducerId got an epoch at once, never CONCURRENT_TRANSACTIONS and a retry
    retries = [r.getMessage() for r in caplog.records if "GETPID" in r.getMessage()]
    assert retries == []
    assert any("settled the previous producer" in r.getMessage() for r in caplog.records)
    assert [m.value for m in read_committed(broker.bootstrap, "settle-out")] == [
        b"from the successor"
    ]
    del dead


def test_with_nothing_open_it_waits_for_nothing(broker: Any) -> None:
    """An unknown id, and an id whose last transaction was committed: one InitProducerId,
    answered at once (it fences the committed producer, as its successor's would)."""
    from streamrt.runtime.engine.clients.txn_settle import settle_open_transaction

    create_topic(broker.bootstrap, "settle-done", 1)

    async def settle() -> bool:
        async with AdminClient(broker.bootstrap) as admin:
            return await settle_open_transaction(admin, TXN_ID, 10_000)

    assert asyncio.run(settle()) is False
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": TXN_ID, "log_level": 0}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("settle-done", value=b"v")
    producer.commit_transaction(30)
    assert asyncio.run(settle()) is False
    assert [m.value for m in read_committed(broker.bootstrap, "settle-done")] == [b"v"]
