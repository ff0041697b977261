"""What an owner such as the stream thread needs of GroupMember, against a real broker: user
data in the subscription and each assignment, the join-prepare callback, commits on their own
connection, a membership check that reports fencing, and a close that revokes nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping

from streamrt.membership.assignment import MemberSubscription
from streamrt.membership.config import FencedInstanceError, MemberConfig
from streamrt.membership.member import GroupMember
from streamrt.membership.protocol import TopicPartition
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic
from tests.membership.support import TIMINGS, Recorder, RoundRobin, closing

BOUND = 60.0


class Tagging(RoundRobin):
    """Round-robin, and user data: each member says its name, the leader echoes it back."""

    def __init__(self, me: str) -> None:
        self.me = me
        self.seen: dict[str, bytes | None] = {}
        self.received: list[bytes | None] = []

    def subscription_user_data(self) -> bytes | None:
        return self.me.encode()

    def assign(
        self, members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]
    ) -> dict[str, set[TopicPartition]]:
        self.seen = {m: s.subscription.user_data for m, s in members.items()}
        return super().assign(members, partitions_per_topic)

    def assignment_user_data(self, member_id: str) -> bytes | None:
        return b"for " + (self.seen.get(member_id) or b"?")

    def on_assignment(self, user_data: bytes | None) -> None:
        self.received.append(user_data)


class Preparing(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.prepared = 0

    async def on_join_prepare(self) -> None:
        self.prepared += 1


def owner_member(bootstrap: str, group: str, topic: str, instance: str) -> GroupMember:
    config = MemberConfig.from_config(
        {"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance} | TIMINGS
    )
    listener = Preparing()
    m = GroupMember(config, [topic], Tagging(instance), listener, offsets_connection=True)
    listener.member = m
    return m


def test_user_data_join_prepare_commit_check_and_quiet_close(any_broker: BrokerEndpoint) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"topic-{suffix}", f"group-{suffix}"
    create_topic(any_broker.bootstrap, topic, partitions=2)

    async def scenario() -> None:
        async with closing([]) as members:
            a = owner_member(any_broker.bootstrap, group, topic, "a")
            members.append(a)
            async with asyncio.timeout(BOUND):
                await a.start()
            assignor, listener = a.assignor, a.listener
            assert isinstance(assignor, Tagging) and isinstance(listener, Preparing)
            assert assignor.seen == {a.member_id: b"a"}  # the subscription's user data
            assert assignor.received == [b"for a"]  # the assignment's, before the listener
            assert listener.prepared == 1
            await a.commit({(topic, 0): 5})  # on the offsets connection
            assert await a.committed([(topic, 0), (topic, 1)]) == {(topic, 0): 5}
            await a.check_membership()  # still the current incarnation
            b = owner_member(any_broker.bootstrap, group, topic, "a")  # takes the instance id
            members.append(b)
            async with asyncio.timeout(BOUND):
                await b.start()
            try:
                async with asyncio.timeout(BOUND):
                    await a.check_membership()
                raise AssertionError("the fenced member's check passed")
            except FencedInstanceError:
                pass
            owned = b.assignment
            await b.close(revoke=False)
            assert isinstance(b.listener, Recorder)
            assert b.listener.of("revoked") == [] and owned  # nothing revoked on a quiet close

    asyncio.run(scenario())
