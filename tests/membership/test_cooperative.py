"""KIP-429 cooperative rebalancing: the two rounds on a real broker, and the leader's rules."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from streamrt.admin.client import AdminClient
from streamrt.membership.assignment import AssignmentError, cooperative_adjust
from streamrt.membership.config import MemberConfig
from streamrt.membership.member import GroupMember
from streamrt.membership.protocol import ConsumerSubscription
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic, wait_until_async
from tests.membership.support import TIMINGS, Recorder, balanced, closing, member, recorder

BOUND = 60.0


def _names() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"topic-{suffix}", f"group-{suffix}"


async def _started(members: list[GroupMember], m: GroupMember) -> GroupMember:
    members.append(m)
    async with asyncio.timeout(BOUND):
        await m.start()
    return m


def _sub(owned: dict[str, tuple[int, ...]], generation: int) -> ConsumerSubscription:
    return ConsumerSubscription(3, ("t",), owned, generation, None, None)


def test_cooperative_adjust_holds_back_partitions_another_member_still_owns() -> None:
    subscriptions = {
        "a": _sub({"t": (0, 1, 2)}, 4),
        "b": _sub({"t": (3, 4, 5)}, 4),
        "c": _sub({}, -1),
    }
    target = {
        "a": {("t", 0), ("t", 3)},
        "b": {("t", 1), ("t", 4)},
        "c": {("t", 2), ("t", 5)},
    }
    assert cooperative_adjust(subscriptions, target) == {
        "a": {("t", 0)},
        "b": {("t", 4)},
        "c": set(),
    }


def test_cooperative_adjust_ignores_claims_from_an_older_generation() -> None:
    subscriptions = {"a": _sub({"t": (0,)}, 3), "b": _sub({"t": (1,)}, 4)}
    adjusted = cooperative_adjust(subscriptions, {"a": {("t", 1)}, "b": {("t", 0)}})
    assert adjusted == {"a": set(), "b": {("t", 0)}}


def test_cooperative_adjust_refuses_a_partition_assigned_twice() -> None:
    with pytest.raises(AssignmentError, match="t-0 is assigned to both"):
        cooperative_adjust({}, {"a": {("t", 0)}, "b": {("t", 0)}})


def test_a_third_member_moves_only_what_must_move(any_broker: BrokerEndpoint) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=6)
    bootstrap = any_broker.bootstrap

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(
                members, member(bootstrap, group, topic, instance="a", protocol="cooperative")
            )
            b = await _started(
                members, member(bootstrap, group, topic, instance="b", protocol="cooperative")
            )
            await wait_until_async(lambda: balanced([a, b], 6, topic), BOUND, "a 3/3 split")
            before = {"a": a.assignment, "b": b.assignment}
            mark = {"a": len(recorder(a).events), "b": len(recorder(b).events)}
            c = await _started(
                members, member(bootstrap, group, topic, instance="c", protocol="cooperative")
            )
            await wait_until_async(lambda: balanced([a, b, c], 6, topic), BOUND, "2/2/2")
            for name, m in (("a", a), ("b", b)):
                events = recorder(m).events[mark[name] :]
                kept = before[name] & m.assignment
                revoked = {tp for e in events if e.kind == "revoked" for tp in e.partitions}
                assert kept and not kept & revoked, f"{name} lost a partition it kept"
                assert revoked == before[name] - m.assignment
                assert not [e for e in events if e.kind == "lost"]
            # the moved partitions reach c only in a later generation than c's first one
            moved = (before["a"] | before["b"]) & c.assignment
            first = recorder(c).of("assigned")[0]
            assert moved and not moved & first.partitions
            later = [e for e in recorder(c).of("assigned") if e.generation > first.generation]
            assert moved <= {tp for e in later for tp in e.partitions}
            # round one: a and b revoke in the generation c first joined; round two hands out
            revoked_gen = {
                e.generation
                for name, m in (("a", a), ("b", b))
                for e in recorder(m).events[mark[name] :]
                if e.kind == "revoked"
            }
            assert revoked_gen == {first.generation}
            assert min(e.generation for e in later) > first.generation

    asyncio.run(scenario())


def test_a_member_removed_from_the_group_sees_its_partitions_lost(
    any_broker: BrokerEndpoint,
) -> None:
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=4)
    bootstrap = any_broker.bootstrap

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(
                members, member(bootstrap, group, topic, instance="a", protocol="cooperative")
            )
            b = await _started(
                members, member(bootstrap, group, topic, instance="b", protocol="cooperative")
            )
            await wait_until_async(lambda: balanced([a, b], 4, topic), BOUND, "a 2/2 split")
            b_owned = b.assignment
            async with AdminClient(bootstrap) as admin:
                assert await admin.remove_members(group, ["b"]) == {"b": None}
            await wait_until_async(lambda: recorder(b).of("lost"), BOUND, "b sees lost")
            assert recorder(b).of("lost")[0].partitions == b_owned
            assert not recorder(b).of("revoked")
            await wait_until_async(lambda: balanced([a, b], 4, topic), BOUND, "2/2 again")
            assert a.error is None and b.error is None

    asyncio.run(scenario())


def test_cooperative_subscription_carries_owned_partitions_and_generation(
    any_broker: BrokerEndpoint,
) -> None:
    """What the leader reads (and DescribeGroups shows): v3 with owned + generation."""
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=2)

    async def scenario() -> None:
        async with closing([]) as members:
            a = await _started(
                members,
                member(any_broker.bootstrap, group, topic, instance="a", protocol="cooperative"),
            )
            a.request_rejoin("test: rejoin with owned partitions")
            first = a.generation
            await wait_until_async(lambda: a.generation > first, BOUND, "a rejoined")
            async with AdminClient(any_broker.bootstrap) as admin:
                (m,) = (await admin.describe_groups([group]))[group].members
            assert m.subscription is not None
            assert m.subscription.owned_partitions == {topic: (0, 1)}
            assert m.subscription.generation_id == first
            assert not recorder(a).of("revoked")

    asyncio.run(scenario())


class _Twice:
    """A broken assignor: every partition to every member and to a member that is not there."""

    name = "broken"

    def assign(self, members: Any, partitions_per_topic: Any) -> dict[str, set[Any]]:
        every = {(t, p) for t, n in partitions_per_topic.items() for p in range(n)}
        return {**{m: set(every) for m in members}, "ghost": set(every)}


def test_a_leader_whose_assignor_double_assigns_stops_with_the_reason(broker: Any) -> None:
    topic, group = _names()
    create_topic(broker.bootstrap, topic, partitions=1)
    config = MemberConfig.from_config(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "rebalance.protocol": "cooperative",
            **TIMINGS,
        }
    )

    async def scenario() -> None:
        m = GroupMember(config, [topic], _Twice())
        try:
            with pytest.raises(AssignmentError, match="assigned to both"):
                async with asyncio.timeout(BOUND):
                    await m.start()
            assert isinstance(m.error, AssignmentError)
        finally:
            await m.close()

    asyncio.run(scenario())


class _HeldSync:
    """Holds a member's next SyncGroup until released: a follower whose SyncGroup reaches the
    coordinator only after the group began another round (a slow follower under load)."""

    def __init__(self, m: GroupMember) -> None:
        self.entered, self.release = asyncio.Event(), asyncio.Event()
        self.answers: list[int] = []
        self._sync = m.client.sync
        m.client.sync = self  # type: ignore[method-assign]

    async def __call__(self, *args: Any) -> Any:
        if not self.release.is_set():
            self.entered.set()
            await self.release.wait()
        response = await self._sync(*args)
        self.answers.append(int(response.error_code))
        return response


def test_a_follower_whose_sync_is_refused_keeps_its_claims_in_the_next_round(
    any_broker: BrokerEndpoint,
) -> None:
    """As Kafka's AbstractCoordinator, the generation comes from the JoinGroup answer: a
    follower whose SyncGroup is refused (REBALANCE_IN_PROGRESS) claims its partitions in the
    next round at the generation the others claim theirs, so the leader holds them back until
    it revoked them. With the generation of its last completed round, its claims were the
    oldest and ignored, and the leader handed a partition it still processed to another
    member (an exactly-once app counted that partition's input twice)."""
    topic, group = _names()
    create_topic(any_broker.bootstrap, topic, partitions=4)
    bootstrap = any_broker.bootstrap

    def coop(instance: str) -> GroupMember:
        return member(bootstrap, group, topic, instance=instance, protocol="cooperative")

    async def state() -> str | None:
        async with AdminClient(bootstrap) as admin:
            return (await admin.describe_groups([group]))[group].state

    async def scenario() -> None:
        async with closing([]) as members:
            leader = await _started(members, coop("l"))
            a = await _started(members, coop("a"))
            await wait_until_async(lambda: balanced([leader, a], 4, topic), BOUND, "2/2")
            held = _HeldSync(a)
            owned_by_a = set(a.assignment)
            mark = {id(m): len(recorder(m).events) for m in members}
            # c joins: a joins that round but its SyncGroup is held; the leader's goes through,
            # it revokes what c takes in round two and rejoins: another round begins
            await _started(members, coop("c"))
            await wait_until_async(lambda: held.entered.is_set(), BOUND, "a's sync held")
            deadline = asyncio.get_running_loop().time() + BOUND
            while await state() != "PreparingRebalance":
                assert asyncio.get_running_loop().time() < deadline, "no new round began"
                await asyncio.sleep(0.05)
            held.release.set()
            await wait_until_async(lambda: bool(held.answers), BOUND, "a's sync answered")
            assert held.answers[0] == 27  # REBALANCE_IN_PROGRESS: the case under test
            await wait_until_async(lambda: balanced(members, 4, topic), BOUND, "settled")
            # each partition a owned is handed to another member only in a generation after
            # the one in which a revoked it
            revoked_at = {
                tp: e.generation for e in recorder(a).of("revoked") for tp in e.partitions
            }
            for other in (m for m in members if m is not a):
                for e in recorder(other).events[mark.get(id(other), 0) :]:
                    for tp in e.partitions & owned_by_a if e.kind == "assigned" else ():
                        assert tp in revoked_at and e.generation > revoked_at[tp], (
                            f"{tp} handed to {other.config.group_instance_id} in generation "
                            f"{e.generation} while a still owned it"
                        )

    asyncio.run(scenario())


class _SlowAssigned(Recorder):
    """An assigned callback that takes several session timeouts (as one waiting for the stable
    offset of a partition whose previous owner died mid-transaction)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.slow = False

    async def on_partitions_assigned(self, partitions: set[Any]) -> None:  # type: ignore[override]
        self._record("assigned", partitions)
        if self.slow:
            await asyncio.sleep(self.seconds)


def test_a_member_whose_callback_outlasts_its_session_stays_in_the_group(
    broker: Any,
) -> None:
    """As Kafka's heartbeat thread, the member heartbeats while its callbacks run: an assigned
    callback of 2 session timeouts costs the member nothing (before, the coordinator removed it:
    UNKNOWN_MEMBER_ID, its partitions lost). Ten heartbeats per session: a loaded machine
    delaying a few must not fail the test (1.5 s sessions did, once, beside a CI run)."""
    topic, group = _names()
    create_topic(broker.bootstrap, topic, partitions=4)
    fast = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 300}

    async def scenario() -> None:
        async with closing([]) as members:
            slow_listener = _SlowAssigned(6.5)
            a = member(broker.bootstrap, group, topic, instance="a", protocol="cooperative", **fast)
            a.listener = slow_listener
            slow_listener.member = a
            await _started(members, a)
            slow_listener.slow = True
            b = member(broker.bootstrap, group, topic, instance="b", protocol="cooperative", **fast)
            await _started(members, b)
            await wait_until_async(lambda: balanced([a, b], 4, topic), BOUND, "a 2/2 split")
            await asyncio.sleep(3.5)  # the session of a member that stopped beating is over
            assert not slow_listener.of("lost") and a.error is None
            assert balanced([a, b], 4, topic)

    asyncio.run(scenario())
