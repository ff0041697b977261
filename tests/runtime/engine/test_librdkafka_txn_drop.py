"""A transaction during which a broker connection dropped is given up at once (issue 43).

Why: librdkafka's transactional calls made after its coordinator went away can ignore their
timeout (librdkafka #5456); the runtime bounded them, but a broker kill then cost the whole
bound after the broker was back. These tests restart or stop the real embedded broker under
a transaction of librdkafka's real producer: the transaction is lost without waiting on the
old client, nothing of it is committed, and a new producer commits once the broker is back.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from confluent_kafka import KafkaError

from streamrt.runtime.engine.clients import rdkafka_txn
from streamrt.runtime.engine.clients.rdkafka_txn import (
    GroupMetadata,
    LibrdkafkaTransactionalCollector,
    ProducerFencedError,
    TransactionalLibrdkafkaProducer,
    transactional_config,
)
from streamrt.state import TopicPartition
from tests.kafka_helpers import create_topic
from tests.runtime.eos_support import read_committed

DROPPED = "a broker connection dropped during the transaction"
_DROP_LOG = ("_TRANSPORT", "_ALL_BROKERS_DOWN")


def _producer(bootstrap: str, txn_id: str) -> TransactionalLibrdkafkaProducer:
    config = transactional_config({"bootstrap.servers": bootstrap, "linger.ms": 1}, txn_id)
    return TransactionalLibrdkafkaProducer(config, lambda: GroupMetadata(-1, "", None))


async def _drop_seen(
    caplog: pytest.LogCaptureFixture, producer: TransactionalLibrdkafkaProducer
) -> None:
    """Wait (generously) until the producer reported a dropped connection: its error
    callback runs from poll, which the flush's slices and ``poll`` serve."""
    deadline = time.monotonic() + 30
    while not any(
        code in r.getMessage()
        for r in caplog.records
        if r.name.endswith("rdkafka_producer")
        for code in _DROP_LOG
    ):
        assert time.monotonic() < deadline, "librdkafka never reported the dropped connection"
        producer.poll()
        await asyncio.sleep(0.05)


async def _commit_one(bootstrap: str, txn_id: str, value: bytes) -> None:
    """A new producer with the same transactional.id (fencing the old one, aborting what it
    left open) commits one record."""
    producer = _producer(bootstrap, txn_id)
    await producer.start()
    collector = LibrdkafkaTransactionalCollector(producer)
    try:
        await collector.begin()
        collector.send("out", b"k", value, 0, int(time.time() * 1000))
        await collector.flush()
        await collector.commit()
    finally:
        await producer.stop()


def test_offsets_after_a_broker_restart_mid_transaction_give_it_up(
    broker, caplog: pytest.LogCaptureFixture
) -> None:
    """The broker restarts after the transaction's record was delivered: the offsets are not
    sent (the call that hangs), the transaction is lost, the client abandoned without an
    abort; the lost record is never committed and a new producer's commit is."""
    create_topic(broker.bootstrap, "in", 1)
    create_topic(broker.bootstrap, "out", 1)
    caplog.set_level(logging.WARNING)

    async def go() -> None:
        producer = _producer(broker.bootstrap, "drop-1")
        await producer.start()
        collector = LibrdkafkaTransactionalCollector(producer)
        try:
            await collector.begin()
            collector.send("out", b"k", b"lost", 0, int(time.time() * 1000))
            await collector.flush()
            await asyncio.to_thread(broker.restart)
            await _drop_seen(caplog, producer)
            await collector.flush()  # nothing queued: done, or already given up
        except ProducerFencedError as exc:
            assert DROPPED in str(exc)
        else:
            with pytest.raises(ProducerFencedError, match=DROPPED):
                await collector.send_offsets({TopicPartition("in", 0): 5}, "drop-group")
        assert producer.stuck
        with pytest.raises(ProducerFencedError):
            await collector.abort()  # no call on the abandoned client
        await asyncio.wait_for(producer.stop(), 30)
        await _commit_one(broker.bootstrap, "drop-1", b"kept")

    asyncio.run(go())
    assert [r.value for r in read_committed(broker.bootstrap, "out")] == [b"kept"]


def test_a_flush_while_the_broker_is_down_gives_the_transaction_up(
    broker, caplog: pytest.LogCaptureFixture
) -> None:
    """Records queued while the broker is down: the commit's flush does not wait for the
    broker (formerly up to the transaction timeout) but loses the transaction at once; once
    the broker is back a new producer commits, and only its record is read."""
    create_topic(broker.bootstrap, "out", 1)
    caplog.set_level(logging.WARNING)

    async def go() -> None:
        producer = _producer(broker.bootstrap, "drop-2")
        await producer.start()
        collector = LibrdkafkaTransactionalCollector(producer)
        try:
            await collector.begin()
            collector.send("out", b"k", b"delivered", 0, int(time.time() * 1000))
            await collector.flush()
            await asyncio.to_thread(broker.stop)
            await _drop_seen(caplog, producer)
            collector.send("out", b"k", b"queued", 0, int(time.time() * 1000))
            with pytest.raises(ProducerFencedError, match=DROPPED):
                await collector.flush()
            assert producer.stuck
        finally:
            await asyncio.wait_for(producer.stop(), 30)
        await asyncio.to_thread(broker.start)
        await _commit_one(broker.bootstrap, "drop-2", b"kept")

    asyncio.run(go())
    assert [r.value for r in read_committed(broker.bootstrap, "out")] == [b"kept"]


def test_a_drop_reported_between_transactions_dooms_the_next_one(
    broker, caplog: pytest.LogCaptureFixture
) -> None:
    """The broker goes away after a commit and is back before the next transaction begins:
    that transaction is lost too (seen in the EOS chaos test: the drop was reported after a
    commit, and the next send_offsets_to_transaction waited out its whole bound)."""
    create_topic(broker.bootstrap, "in", 1)
    create_topic(broker.bootstrap, "out", 1)
    caplog.set_level(logging.WARNING)

    async def go() -> None:
        producer = _producer(broker.bootstrap, "drop-3")
        await producer.start()
        collector = LibrdkafkaTransactionalCollector(producer)
        try:
            await collector.begin()
            collector.send("out", b"k", b"first", 0, int(time.time() * 1000))
            await collector.flush()
            await collector.commit()
            await asyncio.to_thread(broker.stop)
            await _drop_seen(caplog, producer)
            await asyncio.to_thread(broker.start)
            await collector.begin()
            collector.send("out", b"k", b"lost", 0, int(time.time() * 1000))
            with pytest.raises(ProducerFencedError, match=DROPPED):
                await collector.flush()
                await collector.send_offsets({TopicPartition("in", 0): 1}, "drop-group")
                await collector.commit()
        finally:
            await asyncio.wait_for(producer.stop(), 30)
        await _commit_one(broker.bootstrap, "drop-3", b"kept")

    asyncio.run(go())
    assert [r.value for r in read_committed(broker.bootstrap, "out")] == [b"first", b"kept"]


class _DroppingClient:
    """confluent-kafka's Producer whose send_offsets_to_transaction hangs past its timeout,
    as librdkafka's does when the broker goes away during the call (librdkafka #5456), and
    whose next poll reports the dropped connection. The one fake: that hang cannot be
    produced on demand with the real client."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.error_cb: Callable[[KafkaError], None] = config["error_cb"]
        self.calling = threading.Event()
        self.release = threading.Event()

    def init_transactions(self, timeout: float) -> None:
        pass

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        pass

    def begin_transaction(self) -> None:
        pass

    def send_offsets_to_transaction(self, parts: object, blob: bytes, timeout: float) -> None:
        self.calling.set()
        self.release.wait()  # ignores its timeout

    def poll(self, timeout: float = 0) -> int:
        if self.calling.is_set():  # the broker went away while the call was waiting
            self.error_cb(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
        return 0

    def close(self) -> None:
        self.release.wait()


def test_a_call_in_flight_when_the_connection_drops_is_given_up_without_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker goes away while send_offsets_to_transaction is waiting: the producer stops
    waiting as soon as librdkafka reports the drop instead of at the bound (60 s here, so the
    old wait would fail the 30 s limit), and the client is abandoned, not aborted."""
    monkeypatch.setattr(rdkafka_txn, "SEND_OFFSETS_TIMEOUT_S", 60.0)
    made: list[_DroppingClient] = []

    def make(config: dict[str, Any]) -> _DroppingClient:
        made.append(_DroppingClient(config))
        return made[-1]

    producer = TransactionalLibrdkafkaProducer({}, lambda: GroupMetadata(1, "m-1", None))

    async def go() -> None:
        with mock.patch("confluent_kafka.Producer", make):
            await producer.start()
        producer.begin()
        with pytest.raises(ProducerFencedError, match=DROPPED):
            await asyncio.wait_for(
                producer.send_offsets({TopicPartition("in", 0): 5}, "drop-group"), 30
            )
        assert producer.stuck
        with pytest.raises(ProducerFencedError):
            await producer.abort()
        await asyncio.wait_for(producer.stop(), 5)

    try:
        asyncio.run(go())
    finally:
        for client in made:
            client.release.set()


def test_every_runtime_client_reconnects_within_kafkas_backoff() -> None:
    """librdkafka's reconnect backoff doubles up to 10 s, Kafka's Java client's up to 1 s: a
    restore consumer that kept trying through a broker restart came back 9.1 s after the
    broker (EOS chaos run). The producer, main and restore consumers use Kafka's bound, and
    librdkafka accepts it."""
    from confluent_kafka import Consumer, Producer

    from streamrt.runtime.config import StreamsConfig
    from streamrt.runtime.engine.clients.rdkafka_consumer import librdkafka_consumer_config
    from streamrt.runtime.engine.clients.rdkafka_producer import librdkafka_config
    from streamrt.runtime.engine.clients.rdkafka_restore import librdkafka_restore_config

    cfg = StreamsConfig.from_mapping({"application.id": "rb"}).client_config()
    producer = librdkafka_config(cfg, "p")
    main, _ = librdkafka_consumer_config(cfg, "c", "rb", True)
    restore, _ = librdkafka_restore_config(cfg, "r", "rb", True)
    for config in (producer, main, restore):
        assert config["reconnect.backoff.max.ms"] == 1000
    Producer(producer).flush(0)  # librdkafka checks every name and value
    Consumer(restore).close()
