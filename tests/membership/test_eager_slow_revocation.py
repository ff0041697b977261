"""An eager member whose revocation outlasts a heartbeat interval (a stream thread commits and
closes every task there) joins the rebalance that asked for it, and no other (real broker)."""

from __future__ import annotations

import asyncio
import uuid

from streamrt.membership.protocol import TopicPartition
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic, wait_until_async
from tests.membership.support import Recorder, balanced, closing, member

BOUND = 60.0  # every wait is bounded; none is a timing assertion
SETTLE_S = 4.0  # a spurious rebalance would start within a heartbeat (0.2 s) of the last one


class SlowRevocation(Recorder):
    """Revocation takes several heartbeat intervals, as committing and closing tasks can."""

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:  # type: ignore[override]
        await asyncio.sleep(1.0)
        self._record("revoked", partitions)


def test_a_slow_eager_revocation_does_not_ask_for_another_rebalance(
    any_broker: BrokerEndpoint,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"topic-{suffix}", f"group-{suffix}"
    create_topic(any_broker.bootstrap, topic, partitions=4)

    async def scenario() -> None:
        async with closing([]) as members:
            for instance in ("a", "b"):
                m = member(any_broker.bootstrap, group, topic, instance=instance)
                slow = SlowRevocation()
                slow.member, m.listener = m, slow
                members.append(m)
                async with asyncio.timeout(BOUND):
                    await m.start()
            await wait_until_async(lambda: balanced(members, 4, topic), BOUND, "a 2/2 split")
            await asyncio.sleep(SETTLE_S)  # long enough for a needless rejoin to start
            await wait_until_async(lambda: balanced(members, 4, topic), BOUND, "settled")
            # a: its first assignment, then the rebalance b's join began; b: its first
            assert [m.rebalances for m in members] == [2, 1]

    asyncio.run(scenario())
