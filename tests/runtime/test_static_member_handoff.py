"""A replaced static member must not take its ``group.instance.id`` back (hand-off race).

Under load the hand-off successor was fenced (FENCED_INSTANCE_ID, exit 4) because the old
process's consumer, still open while its stores closed, sent the coordinator a request with its
stale member id and no instance id, got UNKNOWN_MEMBER_ID, reset its member id and rejoined
with an empty one: that JoinGroup replaced the successor. Real embedded broker, real aiokafka.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import CommitFailedError

from streamrt.broker.embedded import BrokerThread
from streamrt.runtime.engine import kafka_adapter
from tests.kafka_helpers import create_topic, wait_until_async

pytestmark = pytest.mark.slow

TOPIC = "handoff-input"
INSTANCE = "web-1-thread-1"


def member(bootstrap: str, client_id: str, instance: str = INSTANCE) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id="handoff-group",
        group_instance_id=instance,
        client_id=client_id,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=100,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )


async def joined(consumer: AIOKafkaConsumer) -> AIOKafkaConsumer:
    """Started with the runtime's heartbeat, subscribed, and holding an assignment."""
    await consumer.start()
    kafka_adapter.install_static_heartbeat(consumer)
    consumer.subscribe([TOPIC])

    async def assigned() -> bool:
        await consumer.getmany(timeout_ms=50)
        return bool(consumer.assignment())

    await wait_until_async(assigned, 30, "an assignment")
    return consumer


def test_a_retired_member_never_takes_the_instance_id_back(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, TOPIC, 2)

    async def scenario() -> None:
        old = await joined(member(broker.bootstrap, "old-process"))
        kafka_adapter.retire_static_member(old)  # the old thread's final commit is made
        new = await joined(member(broker.bootstrap, "successor"))
        try:
            # the old consumer's last gasp: a commit with its replaced member id (no instance
            # id on OffsetCommit: UNKNOWN_MEMBER_ID, aiokafka forgets its member id) and a
            # rejoin it heard of while closing
            with pytest.raises(CommitFailedError):
                await old.commit({TopicPartition(TOPIC, 0): 0})
            kafka_adapter.request_rejoin(old)
            await asyncio.sleep(2.0)  # 20 heartbeat intervals: any rejoin is done by now
            await kafka_adapter.check_static_membership(new)  # raises if fenced
            assert new.assignment()
        finally:
            await old.stop()
            await new.stop()

    asyncio.run(scenario())


def test_every_heartbeat_of_a_static_member_carries_its_instance_id(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    """After a non-zero answer (here REBALANCE_IN_PROGRESS, another member joining) aiokafka's
    own heartbeat used to be sent again, v1 without the instance id: once the member was
    replaced meanwhile, that one got UNKNOWN_MEMBER_ID instead of FENCED_INSTANCE_ID."""
    create_topic(broker.bootstrap, TOPIC, 2)
    caplog.set_level(logging.DEBUG, logger="streamrt.broker.request")

    async def scenario() -> None:
        first = await joined(member(broker.bootstrap, "first-member"))
        second = member(broker.bootstrap, "second-member", instance="web-2-thread-1")
        try:
            await joined(second)  # first learns of the rebalance from a heartbeat answer

            async def both_assigned() -> bool:
                await first.getmany(timeout_ms=50)
                return len(first.assignment()) == 1

            await wait_until_async(both_assigned, 30, "the rebalance done")
        finally:
            await second.stop()
            await first.stop()

    asyncio.run(scenario())
    beats = [r.getMessage() for r in caplog.records if "HEARTBEAT v" in r.getMessage()]
    mine = [b for b in beats if " from first-member " in b]
    assert any("rebalance_in_progress" in b for b in mine), mine
    assert all(b.startswith("HEARTBEAT v3 ") for b in mine), [b[:40] for b in mine]
