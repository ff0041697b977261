"""A stable group whose subscribed topic grows: the leader's watch rebalances it (real broker,
partitions added with confluent-kafka's AdminClient)."""

from __future__ import annotations

import asyncio
import uuid

from confluent_kafka.admin import AdminClient, NewPartitions

from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic, wait_until_async
from tests.membership.support import balanced, closing, member

BOUND = 60.0  # every wait is bounded; none is a timing assertion


def _add_partitions(bootstrap: str, topic: str, total: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, total)])[topic].result(30)


def test_partitions_added_to_a_subscribed_topic_are_assigned(any_broker: BrokerEndpoint) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"topic-{suffix}", f"group-{suffix}"
    create_topic(any_broker.bootstrap, topic, partitions=2)

    async def scenario() -> None:
        async with closing([]) as members:
            for _ in range(2):
                m = member(
                    any_broker.bootstrap,
                    group,
                    topic,
                    protocol="cooperative",
                    **{"metadata.max.age.ms": 300},
                )
                members.append(m)
                async with asyncio.timeout(BOUND):
                    await m.start()
            await wait_until_async(lambda: balanced(members, 2, topic), BOUND, "a 1/1 split")
            before = members[0].generation
            await asyncio.to_thread(_add_partitions, any_broker.bootstrap, topic, 5)
            # without the watch the group stays stable and partitions 2-4 belong to nobody
            await wait_until_async(lambda: balanced(members, 5, topic), BOUND, "5 partitions")
            assert members[0].generation > before

    asyncio.run(scenario())
