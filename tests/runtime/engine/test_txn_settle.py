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
from streamrt.runtime.engine.clients.clients import ClientFactory, ThreadClients
from streamrt.runtime.engine.clients.rdkafka_txn import TransactionalLibrdkafkaProducer
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


CLIENT = f"{APP}-i-1-thread-1"


def successor(bootstrap: str) -> ThreadClients:
    """The restarted thread's clients, as a stream thread builds them."""
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
    return ClientFactory(env, CLIENT, "i-1-1", TXN_ID, no_metadata).build()


async def restart(clients: ThreadClients) -> None:
    """The thread's offsets consumer starts before its producer (``ThreadClients.start``
    under exactly_once_v2), then the producer commits one record."""
    producer = clients.producer
    assert isinstance(producer, TransactionalLibrdkafkaProducer)
    await clients.offsets_consumer.start()
    try:
        await producer.start()
        try:
            producer.begin()
            assert producer.produce("settle-out", b"k", b"from the successor", 0, 1, None)
            await producer.flush()
            await producer.commit()
        finally:
            await producer.stop()
    finally:
        await clients.offsets_consumer.stop()


def test_the_successor_does_not_wait_for_librdkafkas_pid_retry(
    broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    create_topic(broker.bootstrap, "settle-out", 1)
    dead = crashed_producer(broker.bootstrap, "settle-out")
    clients = successor(broker.bootstrap)
    with caplog.at_level(logging.INFO):
        asyncio.run(restart(clients))
    # the old transaction was fenced and aborted before init_transactions was sent: its
    # InitProducerId got an epoch at once, never CONCURRENT_TRANSACTIONS and a retry
    retries = [r.getMessage() for r in caplog.records if "GETPID" in r.getMessage()]
    assert retries == []
    assert any("settled the previous producer" in r.getMessage() for r in caplog.records)
    assert [m.value for m in read_committed(broker.bootstrap, "settle-out")] == [
        b"from the successor"
    ]
    del dead


def test_the_settle_opens_no_admin_connection_of_its_own(
    broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The settle's InitProducerId goes over the thread's admin client (the offsets
    consumer's), not over an admin client of its own, which cost every exactly-once producer
    start a connection with its ApiVersions and Metadata (the broker's request trace names
    each request's client id)."""
    create_topic(broker.bootstrap, "settle-out", 1)
    dead = crashed_producer(broker.bootstrap, "settle-out")
    with caplog.at_level(logging.DEBUG, logger="streamrt.broker.request"):
        asyncio.run(restart(successor(broker.bootstrap)))
    traced = [r.args for r in caplog.records if r.name == "streamrt.broker.request"]
    senders = {str(args[2]) for args in traced if isinstance(args, tuple)}
    init = {str(a[2]) for a in traced if isinstance(a, tuple) and a[0] == "INIT_PRODUCER_ID"}
    assert f"{CLIENT}-offsets" in senders
    assert not {s for s in senders if s.startswith(CLIENT)} - {
        f"{CLIENT}-offsets",
        f"{CLIENT}-producer",
    }
    assert init == {f"{CLIENT}-offsets", f"{CLIENT}-producer"}
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
