"""Differential: the group coordinator's KIP-345 rule stories, on the wire, on both brokers.

Each story sends the same raw requests (pinned versions) to our embedded broker and to Apache
Kafka and asserts the same answers. Where Apache Kafka answers differently, our broker is
wrong (or the test is): docs/apache-kafka.md lists what was found.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from tests.apache_kafka.support import (
    BrokerEndpoint,
    RawGroups,
    assignment,
    error_name,
    run,
    subscription,
)

# Valid consumer-protocol bytes: Apache Kafka 4.x parses a "consumer" group's stored
# subscriptions and assignments when it loads __consumer_offsets after a restart, and one
# that does not parse fails the whole partition's load (NOT_COORDINATOR for all its groups).
A, B = assignment(b"A"), assignment(b"B")


def _group() -> str:
    return f"wire-{uuid.uuid4().hex[:8]}"


async def _form_two(
    ga: RawGroups, gb: RawGroups, a_session: int = 10_000, b_session: int = 10_000
) -> dict[str, Any]:
    """A static leader "a" alone (generation N), then "b" joins: a rebalance to N+1.

    One connection per member: a broker answers a connection's requests in order, so a
    parked JoinGroup would hold back every later request on it.
    """
    g = ga
    a = await g.join("", "a", a_session)
    assert error_name(a.error_code) == "NONE"
    a_id, gen1 = str(a.member_id), int(a.generation_id)
    assert str(a.leader) == a_id
    s = await g.sync(gen1, a_id, "a", {a_id: A})
    assert (error_name(s.error_code), bytes(s.assignment)) == ("NONE", A)

    b_join = asyncio.create_task(gb.join("", "b", b_session))
    # b is parked until the known member a rejoins; a hears of it on its next heartbeat (NONE
    # until b's JoinGroup has reached the coordinator, which a loaded machine can delay).
    heard, deadline = "NONE", time.monotonic() + 20
    while heard == "NONE" and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        heard = await g.heartbeat(gen1, a_id, "a")
    assert heard == "REBALANCE_IN_PROGRESS"
    a2 = await g.join(a_id, "a", a_session)
    b = await b_join
    b_id = str(b.member_id)
    gen2 = int(a2.generation_id)
    assert (error_name(a2.error_code), error_name(b.error_code)) == ("NONE", "NONE")
    assert (gen2, int(b.generation_id), str(a2.leader)) == (gen1 + 1, gen1 + 1, a_id)
    assert sorted(str(m.member_id) for m in a2.members) == sorted([a_id, b_id])
    assert list(b.members) == []  # only the leader gets the member list
    sa, sb = await asyncio.gather(
        g.sync(gen2, a_id, "a", {a_id: A, b_id: B}), gb.sync(gen2, b_id, "b")
    )
    assert (bytes(sa.assignment), bytes(sb.assignment)) == (A, B)
    return {"a": a_id, "b": b_id, "gen": gen2}


def test_static_rejoin_within_session_keeps_generation_and_assignment(
    any_broker: BrokerEndpoint,
) -> None:
    async def story() -> list[tuple[str, Any]]:
        group = _group()
        g, gb = RawGroups(any_broker.bootstrap, group), RawGroups(any_broker.bootstrap, group)
        try:
            f = await _form_two(g, gb)
            seen: list[tuple[str, Any]] = []
            # "b" restarts: member id "" with its instance id, while the group is Stable.
            b2 = await g.join("", "b")
            b2_id = str(b2.member_id)
            seen.append(("rejoin error", error_name(b2.error_code)))
            seen.append(("rejoin generation unchanged", int(b2.generation_id) == f["gen"]))
            seen.append(("new member id", b2_id not in (f["b"], "")))
            seen.append(("member id prefixed by instance id", b2_id.startswith("b-")))
            seen.append(("leader stays a", str(b2.leader) == f["a"]))
            s = await g.sync(f["gen"], b2_id, "b")
            seen.append(("sync", (error_name(s.error_code), bytes(s.assignment))))
            seen.append(("leader heartbeat", await g.heartbeat(f["gen"], f["a"], "a")))
            seen.append(("new b heartbeat", await g.heartbeat(f["gen"], b2_id, "b")))
            # The old member id of "b" is fenced on every group request.
            seen.append(("old b heartbeat", await g.heartbeat(f["gen"], f["b"], "b")))
            old_sync = await g.sync(f["gen"], f["b"], "b")
            seen.append(("old b sync", error_name(old_sync.error_code)))
            old_join = await g.join(f["b"], "b")
            seen.append(("old b join", error_name(old_join.error_code)))
            seen.append(("old b leave", await g.leave([(f["b"], "b")])))
            seen.append(("still no rebalance", await g.heartbeat(f["gen"], f["a"], "a")))
            return seen
        finally:
            await g.close()
            await gb.close()

    assert run(story()) == [
        ("rejoin error", "NONE"),
        ("rejoin generation unchanged", True),
        ("new member id", True),
        ("member id prefixed by instance id", True),
        ("leader stays a", True),
        ("sync", ("NONE", B)),
        ("leader heartbeat", "NONE"),
        ("new b heartbeat", "NONE"),
        ("old b heartbeat", "FENCED_INSTANCE_ID"),
        ("old b sync", "FENCED_INSTANCE_ID"),
        ("old b join", "FENCED_INSTANCE_ID"),
        ("old b leave", ("NONE", ["FENCED_INSTANCE_ID"])),
        ("still no rebalance", "NONE"),
    ]


def test_static_rejoin_with_new_subscription_metadata_keeps_generation(
    any_broker: BrokerEndpoint,
) -> None:
    """A restarted Kafka Streams instance rejoins with new user data in its subscription (task
    offset sums change on every start). Same protocol, so no rebalance on either broker: the
    leader and the rejoined follower keep the generation and the follower its assignment."""

    async def story() -> list[tuple[str, Any]]:
        group = _group()
        g, gb = RawGroups(any_broker.bootstrap, group), RawGroups(any_broker.bootstrap, group)
        try:
            f = await _form_two(g, gb)
            b2 = await g.join("", "b", metadata=subscription(b"new user data 1"))
            b2_id = str(b2.member_id)
            s = await g.sync(f["gen"], b2_id, "b")
            a2 = await g.join("", "a", metadata=subscription(b"new user data 2"))
            return [
                ("follower rejoin", error_name(b2.error_code), int(b2.generation_id) - f["gen"]),
                ("follower sync", error_name(s.error_code), bytes(s.assignment)),
                ("leader rejoin", error_name(a2.error_code), int(a2.generation_id) - f["gen"]),
                ("leader heartbeat", await g.heartbeat(f["gen"], str(a2.member_id), "a")),
                ("follower heartbeat", await g.heartbeat(f["gen"], b2_id, "b")),
            ]
        finally:
            await g.close()
            await gb.close()

    assert run(story()) == [
        ("follower rejoin", "NONE", 0),
        ("follower sync", "NONE", B),
        ("leader rejoin", "NONE", 0),
        ("leader heartbeat", "NONE"),
        ("follower heartbeat", "NONE"),
    ]


def test_batch_leave_of_static_members_rebalances_at_once(any_broker: BrokerEndpoint) -> None:
    async def story() -> list[tuple[str, Any]]:
        group = _group()
        g, gb = RawGroups(any_broker.bootstrap, group), RawGroups(any_broker.bootstrap, group)
        try:
            f = await _form_two(g, gb, 60_000, 60_000)
            seen: list[tuple[str, Any]] = []
            # The operator's form: member id "" and the instance id; "zzz" is unknown.
            seen.append(("leave", await g.leave([("", "b"), ("", "zzz")])))
            seen.append(("a heartbeat", await g.heartbeat(f["gen"], f["a"], "a")))
            a = await g.join(f["a"], "a", 60_000)
            seen.append(("a rejoin", error_name(a.error_code)))
            seen.append(("next generation", int(a.generation_id) - f["gen"]))
            seen.append(("members", [str(m.member_id) == f["a"] for m in a.members]))
            seen.append(("removed b heartbeat", await g.heartbeat(f["gen"], f["b"], "b")))
            return seen
        finally:
            await g.close()
            await gb.close()

    assert run(story()) == [
        ("leave", ("NONE", ["NONE", "UNKNOWN_MEMBER_ID"])),
        ("a heartbeat", "REBALANCE_IN_PROGRESS"),
        ("a rejoin", "NONE"),
        ("next generation", 1),
        ("members", [True]),
        ("removed b heartbeat", "UNKNOWN_MEMBER_ID"),
    ]


def test_unknown_member_id_answers(any_broker: BrokerEndpoint) -> None:
    async def story() -> list[tuple[str, Any]]:
        group = _group()
        g, gb = RawGroups(any_broker.bootstrap, group), RawGroups(any_broker.bootstrap, group)
        try:
            f = await _form_two(g, gb)
            seen: list[tuple[str, Any]] = []
            seen.append(("dynamic heartbeat", await g.heartbeat(f["gen"], "nope", None)))
            seen.append(("dynamic join", error_name((await g.join("nope", None)).error_code)))
            sync = await g.sync(f["gen"], "nope", None)
            seen.append(("dynamic sync", error_name(sync.error_code)))
            seen.append(("dynamic leave", await g.leave([("nope", None)])))
            join = await g.join("nope", "c")
            seen.append(("unknown static with a member id", error_name(join.error_code)))
            seen.append(("unknown static heartbeat", await g.heartbeat(f["gen"], "nope", "c")))
            seen.append(("group untouched", await g.heartbeat(f["gen"], f["a"], "a")))
            return seen
        finally:
            await g.close()
            await gb.close()

    assert run(story()) == [
        ("dynamic heartbeat", "UNKNOWN_MEMBER_ID"),
        ("dynamic join", "UNKNOWN_MEMBER_ID"),
        ("dynamic sync", "UNKNOWN_MEMBER_ID"),
        ("dynamic leave", ("NONE", ["UNKNOWN_MEMBER_ID"])),
        ("unknown static with a member id", "UNKNOWN_MEMBER_ID"),
        ("unknown static heartbeat", "UNKNOWN_MEMBER_ID"),
        ("group untouched", "NONE"),
    ]


def test_static_member_past_its_session_timeout_is_removed(any_broker: BrokerEndpoint) -> None:
    async def story() -> list[tuple[str, Any]]:
        group = _group()
        g, gb = RawGroups(any_broker.bootstrap, group), RawGroups(any_broker.bootstrap, group)
        try:
            f = await _form_two(g, gb, a_session=10_000, b_session=1_000)
            seen: list[tuple[str, Any]] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            answer = "NONE"
            while answer == "NONE" and loop.time() < deadline:  # only a heartbeats
                await asyncio.sleep(0.2)
                answer = await g.heartbeat(f["gen"], f["a"], "a")
            seen.append(("a heartbeat after b's session", answer))
            a = await g.join(f["a"], "a")
            seen.append(("a rejoin", error_name(a.error_code)))
            seen.append(("next generation", int(a.generation_id) - f["gen"]))
            seen.append(("members", [str(m.member_id) == f["a"] for m in a.members]))
            seen.append(("expired b heartbeat", await g.heartbeat(f["gen"], f["b"], "b")))
            return seen
        finally:
            await g.close()
            await gb.close()

    assert run(story()) == [
        ("a heartbeat after b's session", "REBALANCE_IN_PROGRESS"),
        ("a rejoin", "NONE"),
        ("next generation", 1),
        ("members", [True]),
        ("expired b heartbeat", "UNKNOWN_MEMBER_ID"),
    ]
