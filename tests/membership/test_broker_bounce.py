"""A rebalance survives a broker bounce in every phase (issue 43): the broker is stopped while
a JoinGroup or SyncGroup is held or parked, between the two rounds of a cooperative
rebalance, with a heartbeat due, or while a revocation or assignment callback runs (it then
reads committed offsets and fails, as a stream thread's does), then started again on the same
port and data dir; within one session timeout of its return every partition is owned again,
by exactly one member whose listener was told so. Before the fix a member whose join or sync
failed on the connection forgot that it had to rejoin and heartbeated on (the group it
restored was Stable at the old generation), so the partitions it had revoked had no owner
until some unrelated session expired.

Phases are reached by holding one real request or callback of one member (the one thing
isolated: a wrapper that waits before calling through); everything else is the real member
against the real embedded broker.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from streamrt.broker.embedded import BrokerThread
from streamrt.membership.member import GroupMember
from tests.kafka_helpers import create_topic, wait_until_async
from tests.membership.support import TIMINGS, closing, member, recorder

PARTITIONS = 4
SESSION_S = TIMINGS["session.timeout.ms"] / 1000
FORM = 60.0  # forming the group, reaching a phase: generous, never asserted as speed


class Gate:
    """Counts one member's calls of one request (or listener callback) and can hold the
    ``hold_at``-th call before it is made, until ``release`` is set. Responses are kept (the
    JoinGroup's says who leads)."""

    def __init__(self, client: Any, request: str) -> None:
        self.calls = 0
        self.hold_at: int | None = None
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.responses: list[Any] = []
        real: Callable[..., Any] = getattr(client, request)

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == self.hold_at:
                self.entered.set()
                await self.release.wait()
            response = real(*args, **kwargs)
            if inspect.isawaitable(response):
                response = await response
            self.responses.append(response)
            return response

        setattr(client, request, call)

    def hold(self, after: int) -> None:
        """Hold the ``after``-th call from now."""
        self.hold_at = self.calls + after


class Member:
    """A real :class:`GroupMember` with gates on its JoinGroup, SyncGroup and Heartbeat."""

    def __init__(self, m: GroupMember) -> None:
        self.m = m
        self.join = Gate(m.client, "join")
        self.sync = Gate(m.client, "sync")
        self.heartbeat = Gate(m.client, "heartbeat")

    def leads(self) -> bool:
        last = self.join.responses[-1]
        return bool(last.leader == last.member_id)


def told(m: Member) -> set[Any]:
    """What the member's listener was told it owns (assigned minus revoked and lost)."""
    owned: set[Any] = set()
    for e in recorder(m.m).events:
        owned = owned | e.partitions if e.kind == "assigned" else owned - e.partitions
    return owned


def covered(members: list[Member], topic: str) -> bool:
    """Every partition owned by exactly one member, all in one generation, and each member's
    listener told of exactly what it owns."""
    owned = [m.m.assignment for m in members]
    return (
        set().union(*owned) == {(topic, p) for p in range(PARTITIONS)}
        and sum(len(o) for o in owned) == PARTITIONS
        and len({m.m.generation for m in members}) == 1
        and all(m.m.error is None and told(m) == m.m.assignment for m in members)
    )


async def _wait(condition: Callable[[], Any], what: str) -> None:
    await wait_until_async(condition, FORM, what, interval=0.02)


async def _entered(gate: Gate, what: str) -> None:
    await _wait(gate.entered.is_set, what)


async def _bounce(broker: BrokerThread, gates: list[Gate]) -> None:
    """Stop the broker (every held or parked request fails), let the held ones go, start it."""
    await asyncio.to_thread(broker.stop)
    for g in gates:
        g.release.set()
    await asyncio.sleep(0.3)  # the released requests meet the stopped broker
    await asyncio.to_thread(broker.start)


@pytest.mark.parametrize(
    ("protocol", "phase"),
    [
        ("eager", "join"),
        ("eager", "sync"),
        ("eager", "heartbeat"),
        ("cooperative", "join"),
        ("cooperative", "sync"),
        ("cooperative", "between rounds"),
        ("cooperative", "revocation callback"),
        ("cooperative", "assignment callback"),
    ],
)
def test_every_partition_is_owned_again_after_a_broker_bounce(
    broker: BrokerThread, protocol: str, phase: str
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"topic-{suffix}", f"group-{suffix}"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    bootstrap = broker.bootstrap

    def new() -> Member:
        return Member(member(bootstrap, group, topic, protocol=protocol))

    async def start(members: list[Member], m: Member) -> asyncio.Task[None]:
        members.append(m)
        return asyncio.create_task(m.m.start())

    async def scenario() -> None:
        members: list[Member] = []
        async with closing([]) as started:
            for _ in range(2):
                m = new()
                started.append(m.m)
                await asyncio.wait_for(await start(members, m), FORM)
            a, b = members
            await _wait(lambda: covered(members, topic), "a and b share the partitions")
            assert a.leads() and not b.leads()
            if protocol == "eager":
                gates = await _eager_phase(phase, a, b)
            else:
                c = new()
                started.append(c.m)
                gates = await _cooperative_phase(phase, a, b, c, lambda: start(members, c))
            await _bounce(broker, gates)
            await wait_until_async(
                lambda: covered(members, topic),
                SESSION_S,
                f"every partition owned again within one session timeout ({protocol}, {phase})",
                interval=0.05,
            )

    asyncio.run(scenario())


async def _eager_phase(phase: str, a: Member, b: Member) -> list[Gate]:
    """A asks to rejoin; the broker stops with a's JoinGroup parked (b's held), with b's
    SyncGroup parked (a's, the leader's, held), or with a's heartbeat held while b rejoins."""
    if phase == "join":
        b.join.hold(1)
        a.m.request_rejoin("test: a rejoins")
        await _entered(b.join, "b heard of the rebalance a's parked JoinGroup began")
        return [b.join]
    if phase == "sync":
        a.sync.hold(1)
        b0 = b.sync.calls
        a.m.request_rejoin("test: a rejoins")
        await _entered(a.sync, "the leader's SyncGroup held")
        await _wait(lambda: b.sync.calls > b0, "b's SyncGroup sent (parked for the leader's)")
        await asyncio.sleep(0.2)
        return [a.sync]
    a.heartbeat.hold(1)
    await _entered(a.heartbeat, "a's heartbeat held")
    calls = b.join.calls
    b.m.request_rejoin("test: b rejoins")
    await _wait(lambda: b.join.calls > calls, "b's JoinGroup sent (parked for a)")
    await asyncio.sleep(0.2)
    return [a.heartbeat]


async def _cooperative_phase(
    phase: str, a: Member, b: Member, c: Member, start_c: Callable[[], Awaitable[Any]]
) -> list[Gate]:
    """C joins a and b. The broker stops in round one with a's JoinGroup parked (b's held)
    or with the followers' SyncGroups parked (the leader a's held); or between the rounds,
    after a and b revoked what c takes, with a's second JoinGroup parked (b's held)."""
    if phase == "join":
        b.join.hold(1)
        a0 = a.join.calls
        await start_c()
        await _entered(b.join, "b heard of the rebalance c began")
        await _wait(lambda: a.join.calls > a0, "a's JoinGroup sent (parked for b)")
        await asyncio.sleep(0.2)
        return [b.join]
    if phase == "sync":
        a.sync.hold(1)
        b0 = b.sync.calls
        await start_c()
        await _entered(a.sync, "the leader's SyncGroup held")
        await _wait(lambda: b.sync.calls > b0 and c.sync.calls > 0, "followers' SyncGroups")
        await asyncio.sleep(0.2)
        return [a.sync]
    if phase == "revocation callback":
        return [await _revoking(a, start_c)]
    if phase == "assignment callback":
        return [await _assigning(c, start_c)]
    b.join.hold(2)
    a0 = a.join.calls
    await start_c()
    await _entered(b.join, "b revoked in round one and holds its second JoinGroup")
    await _wait(lambda: a.join.calls >= a0 + 2, "a's second JoinGroup sent (parked for b)")
    await asyncio.sleep(0.2)
    assert b.m.generation == a.m.generation > 0
    return [b.join]


async def _revoking(a: Member, start_c: Callable[[], Awaitable[Any]]) -> Gate:
    """The broker stops while a's revocation callback runs (round one); the callback then reads
    committed offsets, as a stream thread does, and fails: the second round is due anyway."""
    gate = Gate(a.m.listener, "on_partitions_revoked")
    gate.hold(1)
    gated = a.m.listener.on_partitions_revoked

    async def revoked_then_read(partitions: set[Any]) -> None:
        await gated(partitions)  # type: ignore[misc]
        await a.m.committed(sorted(partitions))

    a.m.listener.on_partitions_revoked = revoked_then_read  # type: ignore[method-assign]
    await start_c()
    await _entered(gate, "a revoking in round one")
    return gate


async def _assigning(c: Member, start_c: Callable[[], Awaitable[Any]]) -> Gate:
    """The broker stops while c's assigned callback for round two runs; the callback reads the
    committed offsets first, as a stream thread does, and fails: the partitions must not stay
    owned without the listener knowing, a rejoin hands them out again."""
    record = c.m.listener.on_partitions_assigned

    async def read_then_record(partitions: set[Any]) -> None:
        if partitions:
            await c.m.committed(sorted(partitions))
        record(partitions)

    c.m.listener.on_partitions_assigned = read_then_record  # type: ignore[method-assign]
    gate = Gate(c.m.listener, "on_partitions_assigned")
    gate.hold(2)  # round one's (nothing new for c) is the first
    await start_c()
    await _entered(gate, "c's assigned callback of round two")
    return gate


def test_a_rebalance_retried_through_a_broker_outage_prepares_once(broker: BrokerThread) -> None:
    """Kafka's needsJoinPrepare: a round that fails because the broker is down is retried
    every retry.backoff.ms, but the listener's on_join_prepare (a stream thread lists its
    changelog ends there, and logged a failure for each retry) runs once per rebalance."""
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"topic-{suffix}", f"group-{suffix}"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)

    async def scenario() -> None:
        a = Member(member(broker.bootstrap, group, topic, protocol="eager"))
        async with closing([a.m]):
            await asyncio.wait_for(a.m.start(), FORM)
            prepares = Gate(a.m.listener, "on_join_prepare")
            a.join.hold(1)
            a.m.request_rejoin("test: a rejoins")
            await _entered(a.join, "a's JoinGroup held")
            await asyncio.to_thread(broker.stop)
            a.join.release.set()
            await asyncio.sleep(1.0)  # several rounds fail against the stopped broker
            failed_rounds = a.join.calls
            await asyncio.to_thread(broker.start)
            await wait_until_async(
                lambda: covered([a], topic), SESSION_S, "a owns every partition again", 0.05
            )
            assert failed_rounds >= 3, "the outage should have failed several rounds"
            assert prepares.calls == 1

    asyncio.run(scenario())
