"""Transactions with aiokafka 0.14 (v0 transaction APIs, TxnOffsetCommit without group
metadata): commit, abort, read_committed consumers, offsets in a transaction, fencing, timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced
from aiokafka.structs import OffsetAndMetadata

from streamrt.broker.embedded import BrokerThread
from tests.broker.transactions_support import read_values, start_txn_broker
from tests.kafka_helpers import create_topic


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = start_txn_broker(tmp_path / "broker")
    yield b
    b.stop()


async def _started(bootstrap: str, txn_id: str, **extra: object) -> AIOKafkaProducer:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, **extra)
    await p.start()
    return p


async def _read(bootstrap: str, topic: str, isolation: str, expect: int, wait_s: float) -> list:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        await consumer.seek_to_beginning()
        values: list[bytes] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while loop.time() < deadline and len(values) < expect:
            batch = await consumer.getmany(timeout_ms=200)
            values += [m.value for msgs in batch.values() for m in msgs]
        return values
    finally:
        await consumer.stop()


def test_commit_abort_and_read_committed(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")

    async def scenario() -> None:
        p = await _started(broker.bootstrap, "aio-tx")
        try:
            async with p.transaction():
                await p.send_and_wait("t", b"c0")
                await p.send_and_wait("t", b"c1")
            await p.begin_transaction()
            await p.send_and_wait("t", b"aborted")
            await p.abort_transaction()
            await p.begin_transaction()
            await p.send_and_wait("t", b"open")
            # An open transaction holds read_committed readers at its first offset.
            assert await _read(broker.bootstrap, "t", "read_committed", 3, 2.0) == [b"c0", b"c1"]
            await p.commit_transaction()
        finally:
            await p.stop()
        committed = await _read(broker.bootstrap, "t", "read_committed", 3, 6.0)
        assert committed == [b"c0", b"c1", b"open"]

    asyncio.run(scenario())
    everything = read_values(broker.bootstrap, "t", "read_uncommitted", expect=4)
    assert everything == [b"c0", b"c1", b"aborted", b"open"]


def test_offsets_commit_with_the_transaction(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "in")
    create_topic(broker.bootstrap, "out")

    async def committed(group: str) -> int | None:
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group)
        await c.start()
        try:
            return await c.committed(TopicPartition("in", 0))
        finally:
            await c.stop()

    async def scenario() -> None:
        p = await _started(broker.bootstrap, "aio-ctp")
        try:
            tp = TopicPartition("in", 0)
            await p.begin_transaction()
            await p.send_and_wait("out", b"x")
            await p.send_offsets_to_transaction({tp: OffsetAndMetadata(3, "")}, "aio-group")
            await p.abort_transaction()
            assert await committed("aio-group") is None
            async with p.transaction():
                await p.send_and_wait("out", b"y")
                await p.send_offsets_to_transaction({tp: OffsetAndMetadata(5, "")}, "aio-group")
        finally:
            await p.stop()
        for _ in range(50):
            if await committed("aio-group") == 5:
                break
            await asyncio.sleep(0.1)
        assert await committed("aio-group") == 5

    asyncio.run(scenario())
    assert read_values(broker.bootstrap, "out", "read_committed", expect=1) == [b"y"]


def test_zombie_is_fenced_by_a_new_producer(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")

    async def scenario() -> None:
        zombie = await _started(broker.bootstrap, "aio-zombie")
        successor = None
        try:
            await zombie.begin_transaction()
            await zombie.send_and_wait("t", b"zombie")
            successor = await _started(broker.bootstrap, "aio-zombie")
            async with successor.transaction():
                await successor.send_and_wait("t", b"successor")
            with pytest.raises(ProducerFenced):
                await zombie.commit_transaction()
        finally:
            await zombie.stop()
            if successor is not None:
                await successor.stop()

    asyncio.run(scenario())
    assert read_values(broker.bootstrap, "t", "read_committed", expect=1) == [b"successor"]


def test_timed_out_transaction_is_aborted_and_fenced(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")

    async def scenario() -> None:
        p = await _started(broker.bootstrap, "aio-timeout", transaction_timeout_ms=1500)
        try:
            await p.begin_transaction()
            await p.send_and_wait("t", b"late")
            await asyncio.sleep(3)
            with pytest.raises(ProducerFenced):
                await p.commit_transaction()
        finally:
            await p.stop()

    asyncio.run(scenario())
    assert read_values(broker.bootstrap, "t", "read_committed", timeout_s=2) == []
