"""kafka_adapter's TxnOffsetCommit v3 against the embedded broker's group coordinator rules:
the current static member commits; its stale incarnation is refused (FENCED_INSTANCE_ID),
which aiokafka's own TxnOffsetCommit v0 cannot be."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from streamrt.runtime.engine import kafka_adapter
from tests.kafka_helpers import create_topic

GROUP = "txn-group"
TP = TopicPartition("in", 0)


async def joined(bootstrap: str, instance: str | None) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(
        "in",
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        group_instance_id=instance,
        enable_auto_commit=False,
        session_timeout_ms=10_000,
        isolation_level="read_committed",
    )
    await consumer.start()
    for _ in range(100):
        await consumer.getmany(timeout_ms=100)
        if consumer.assignment():
            break
    assert consumer.assignment()
    return consumer


async def commit_offsets(
    bootstrap: str,
    txn_id: str,
    offset: int,
    metadata: Callable[[], kafka_adapter.GroupMetadata] | None,
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    if metadata is not None:
        kafka_adapter.install_group_metadata_offsets(producer, metadata)
    await producer.start()
    try:
        await producer.begin_transaction()
        try:
            await producer.send_offsets_to_transaction({TP: offset}, GROUP)
        except BaseException:
            await producer.abort_transaction()
            raise
        await producer.commit_transaction()
    finally:
        await producer.stop()


async def committed(bootstrap: str) -> int | None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP)
    await consumer.start()
    try:
        for _ in range(50):  # the commit marker lands just after EndTxn is answered
            value = await consumer.committed(TP)
            if value is not None:
                return value
            await asyncio.sleep(0.1)
        return None
    finally:
        await consumer.stop()


def test_v3_carries_the_group_metadata_and_a_stale_static_member_is_fenced(broker) -> None:
    create_topic(broker.bootstrap, "in", 1)

    async def go() -> None:
        first = await joined(broker.bootstrap, "inst-1")
        stale = kafka_adapter.group_metadata(first)
        assert stale.group_instance_id == "inst-1" and stale.generation_id >= 1
        assert stale.member_id
        await commit_offsets(broker.bootstrap, "t-1", 5, lambda: stale)
        assert await committed(broker.bootstrap) == 5
        # a new incarnation joins with the same instance id: the first is now stale
        await first.stop()
        second = await joined(broker.bootstrap, "inst-1")
        try:
            current = kafka_adapter.group_metadata(second)
            assert current.member_id != stale.member_id
            with pytest.raises(kafka_adapter.FencedInstanceIdError, match="inst-1"):
                await commit_offsets(broker.bootstrap, "t-1", 9, lambda: stale)
            assert await committed(broker.bootstrap) == 5  # the stale commit never landed
            await commit_offsets(broker.bootstrap, "t-1", 7, lambda: current)
            assert await committed(broker.bootstrap) == 7
            # aiokafka alone (TxnOffsetCommit v0, no metadata) is not checked: the gap
            await commit_offsets(broker.bootstrap, "t-1", 8, None)
            assert await committed(broker.bootstrap) == 8
        finally:
            await second.stop()

    asyncio.run(go())


def test_a_stale_generation_is_refused(broker) -> None:
    create_topic(broker.bootstrap, "in", 1)

    async def go() -> None:
        member = await joined(broker.bootstrap, None)
        try:
            now = kafka_adapter.group_metadata(member)
            old = kafka_adapter.GroupMetadata(now.generation_id - 1, now.member_id, None)
            with pytest.raises(Exception, match="TxnOffsetCommit refused") as info:
                await commit_offsets(broker.bootstrap, "t-2", 3, lambda: old)
            assert info.value.errno == 22  # type: ignore[attr-defined]  # ILLEGAL_GENERATION
            unknown = kafka_adapter.GroupMetadata(now.generation_id, "nobody", None)
            with pytest.raises(Exception, match="TxnOffsetCommit refused") as info:
                await commit_offsets(broker.bootstrap, "t-2", 3, lambda: unknown)
            assert info.value.errno == 25  # type: ignore[attr-defined]  # UNKNOWN_MEMBER_ID
        finally:
            await member.stop()

    asyncio.run(go())


def test_a_fenced_producer_is_recognised() -> None:
    import aiokafka.errors as errors

    outer = RuntimeError("sender died")
    outer.__cause__ = errors.ProducerFenced()
    assert kafka_adapter.is_producer_fenced(outer)
    assert kafka_adapter.is_producer_fenced(errors.InvalidProducerEpoch())
    assert not kafka_adapter.is_producer_fenced(RuntimeError("other"))
