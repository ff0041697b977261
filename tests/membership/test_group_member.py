"""GroupMember against a real broker: dynamic and static members, fencing, eager rebalances,
offsets. ``any_broker`` runs each test on the embedded broker and on Apache Kafka."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from streamrt.admin.client import AdminClient
from streamrt.errors import ErrorCode
from streamrt.membership.config import CommitFailedError, FencedInstanceError
from streamrt.membership.member import GroupMember
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic, wait_until_async
from tests.membership.support import RoundRobin, balanced, closing, member, recorder

BOUND = 60.0  # every wait in these tests is bounded; none is a timing assertion


def _names() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"topic-{suffix}", f"group-{suffix}"


async def _started(members: list[GroupMember], m: GroupMember) -> GroupMember:
    members.append(m)
    async with asyncio.timeout(BOUND):
        await m.start()
    return m


def test_two_dynamic_members_split_the_partitions(any_broker: BrokerEndpoint) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=4)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(members, member(any_broker.bootstrap, group, topic))
            assert a.assignment == {(topic, p) for p in range(4)}
            assert a.member_id and a.generation >= 1
            b = await _started(members, member(any_broker.bootstrap, group, topic))
            await wait_until_async(lambda: balanced([a, b], 4, topic), BOUND, "a 2/2 split")
            assert a.member_id != b.member_id and len(a.assignment) == 2

    asyncio.run(scenario())


def test_subscription_bytes_decode_in_describe_groups(any_broker: BrokerEndpoint) -> None:
    """Our JoinGroup metadata is what Kafka stores; the admin client and aiokafka read it."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=2)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(
                members,
                member(
                    any_broker.bootstrap, group, topic, instance="i-1", **{"client.rack": "rack-a"}
                ),
            )
            async with AdminClient(any_broker.bootstrap) as admin:
                described = (await admin.describe_groups([group]))[group]
            assert described.protocol == "roundrobin" and described.state == "Stable"
            (m,) = described.members
            assert (m.member_id, m.group_instance_id) == (a.member_id, "i-1")
            assert m.subscription is not None and m.subscription.topics == (topic,)
            assert m.subscription.rack_id == "rack-a"
            assert m.assignment is not None and m.assignment.partitions == {topic: (0, 1)}
            assert ConsumerProtocolMemberMetadata.decode(m.metadata).subscription == [topic]

    asyncio.run(scenario())


def test_static_member_restarted_in_its_session_keeps_partitions_and_generation(
    any_broker: BrokerEndpoint,
) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=4)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(members, member(any_broker.bootstrap, group, topic, instance="a"))
            b = await _started(members, member(any_broker.bootstrap, group, topic, instance="b"))
            await wait_until_async(lambda: balanced([a, b], 4, topic), BOUND, "a 2/2 split")
            generation, before, b_rebalances = a.generation, a.assignment, b.rebalances
            await a.close()  # static: no LeaveGroup
            again = await _started(
                members, member(any_broker.bootstrap, group, topic, instance="a")
            )
            assert again.assignment == before
            assert again.generation == generation
            assert again.member_id != a.member_id
            await asyncio.sleep(1.0)  # several of b's heartbeats: still the same generation
            assert (b.generation, b.rebalances) == (generation, b_rebalances)
            assert recorder(b).of("revoked") == []

    asyncio.run(scenario())


def test_a_static_leader_restarted_in_its_session_skips_the_assignment(
    any_broker: BrokerEndpoint,
) -> None:
    """KIP-814: the coordinator tells a static leader that rejoins a stable group to skip the
    assignment (it would ignore the leader's SyncGroup assignments anyway); like Kafka's
    consumer, the member then runs no assignor and gets its old partitions back."""
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=4)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(members, member(any_broker.bootstrap, group, topic, instance="a"))
            b = await _started(members, member(any_broker.bootstrap, group, topic, instance="b"))
            await wait_until_async(lambda: balanced([a, b], 4, topic), BOUND, "a 2/2 split")
            leader = a if isinstance(a.assignor, RoundRobin) and a.assignor.runs else b
            assert isinstance(leader.assignor, RoundRobin) and leader.assignor.runs >= 1
            generation, before = leader.generation, leader.assignment
            await leader.close()  # static: no LeaveGroup
            instance = "a" if leader is a else "b"
            again = await _started(
                members, member(any_broker.bootstrap, group, topic, instance=instance)
            )
            assert (again.assignment, again.generation) == (before, generation)
            assert isinstance(again.assignor, RoundRobin) and again.assignor.runs == 0

    asyncio.run(scenario())


def test_a_second_member_with_the_same_instance_id_fences_the_first(
    any_broker: BrokerEndpoint,
) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=2)

    async def scenario() -> None:
        async with closing([]) as members:
            first = await _started(
                members, member(any_broker.bootstrap, group, topic, instance="x")
            )
            owned = first.assignment
            second = await _started(
                members, member(any_broker.bootstrap, group, topic, instance="x")
            )
            async with asyncio.timeout(BOUND):
                error = await first.wait_failed()
            assert isinstance(error, FencedInstanceError)
            assert error.code == ErrorCode.fenced_instance_id
            assert "'x'" in str(error)
            assert second.assignment == owned
            assert first.assignment == frozenset()
            assert recorder(first).all("lost") == owned

    asyncio.run(scenario())


def test_eager_revokes_everything_on_every_rebalance(any_broker: BrokerEndpoint) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=6)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(members, member(any_broker.bootstrap, group, topic, instance="a"))
            b = await _started(members, member(any_broker.bootstrap, group, topic, instance="b"))
            await wait_until_async(lambda: balanced([a, b], 6, topic), BOUND, "a 3/3 split")
            a_before, b_before = a.assignment, b.assignment
            a_revokes, b_revokes = len(recorder(a).of("revoked")), len(recorder(b).of("revoked"))
            c = await _started(members, member(any_broker.bootstrap, group, topic, instance="c"))
            await wait_until_async(lambda: balanced([a, b, c], 6, topic), BOUND, "2/2/2")
            (a_revoked,) = recorder(a).of("revoked")[a_revokes:]
            (b_revoked,) = recorder(b).of("revoked")[b_revokes:]
            assert a_revoked.partitions == a_before and b_revoked.partitions == b_before
            # eager: what a keeps is handed back to it as newly assigned
            assert recorder(a).of("assigned")[-1].partitions == a.assignment

    asyncio.run(scenario())


def test_offset_commit_with_a_stale_generation_is_refused(any_broker: BrokerEndpoint) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=2)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(members, member(any_broker.bootstrap, group, topic, instance="a"))
            old = a.current_generation
            await a.commit({(topic, 0): 5, (topic, 1): 7}, generation=old)
            assert await a.committed([(topic, 0), (topic, 1)]) == {(topic, 0): 5, (topic, 1): 7}
            b = await _started(members, member(any_broker.bootstrap, group, topic, instance="b"))
            await wait_until_async(lambda: balanced([a, b], 2, topic), BOUND, "a 1/1 split")
            assert a.generation > old.generation_id
            with pytest.raises(CommitFailedError) as refused:
                await a.commit({(topic, 0): 9}, generation=old)
            assert refused.value.code == ErrorCode.illegal_generation
            assert "ILLEGAL_GENERATION" in str(refused.value)
            await a.commit({(topic, 0): 9})  # the current generation is accepted
            assert (await a.committed([(topic, 0)]))[(topic, 0)] == 9

    asyncio.run(scenario())


def test_a_dynamic_member_leaves_on_close_and_the_other_takes_over(
    any_broker: BrokerEndpoint,
) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=4)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(members, member(any_broker.bootstrap, group, topic))
            b = await _started(members, member(any_broker.bootstrap, group, topic))
            await wait_until_async(lambda: balanced([a, b], 4, topic), BOUND, "a 2/2 split")
            b_owned = b.assignment
            await b.close()
            assert recorder(b).of("revoked")[-1].partitions == b_owned
            # well within the 10 s session: only a LeaveGroup makes this quick
            async with asyncio.timeout(5):
                await wait_until_async(lambda: len(a.assignment) == 4, 5, "a owns all 4")

    asyncio.run(scenario())
