"""Static members of KIP-848 consumer groups: the scenarios of Kafka's group-coordinator
``GroupMetadataManagerTest`` (testStaticMemberGetsBackAssignmentUponRejoin,
testStaticMemberRejoinsWithNewSubscribedTopics,
testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves, testLeavingStaticMemberBumpsGroupEpoch,
testShouldThrownUnreleasedInstanceIdException...,
testShouldThrownUnknownMemberIdException..., testShouldThrowFencedInstanceIdException...,
testConsumerGroupMemberEpochValidationForStaticMember, the request validation), written again
as raw ConsumerGroupHeartbeat/Describe sequences over real sockets.

Kafka's tests start from a group built in memory; here the group is built by heartbeats, so
each scenario first converges two static members, then sends the request under test. Every
test runs on the embedded broker and on Apache Kafka 4.3.1 (``any_broker``) and asserts
Kafka's answers, not streamrt's; members leave at the end so the group can be deleted."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from streamrt.admin.connection import BrokerConnection
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic

GROUP = "static-scenarios"
Scenario = Callable[[BrokerConnection], Awaitable[None]]


class Member:
    """One static (or dynamic) consumer-protocol member: its ids, epoch and owned partitions
    (by topic id), heartbeating as a consumer that reconciles at once."""

    def __init__(self, instance: str | None, topics: tuple[str, ...]) -> None:
        self.member_id = uuid.uuid4().hex  # KIP-848 v1: the client makes its member id
        self.instance = instance
        self.topics = topics
        self.epoch = 0
        self.owned: dict[bytes, set[int]] = {}

    async def beat(self, conn: BrokerConnection, epoch: int | None = None, **over: Any) -> Any:
        """One heartbeat; at epoch 0 a full join. Answers are not applied (see ``apply``)."""
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        fields: dict[str, Any] = {
            "group_id": GROUP,
            "member_id": self.member_id,
            "member_epoch": epoch,
            "instance_id": self.instance,
            "rack_id": None,
            "rebalance_timeout": 30_000 if joining else -1,
            "subscribed_topic_names": list(self.topics) if joining else None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": [] if joining else self._owned(),
        }
        fields.update(over)
        return await conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, **fields)

    def apply(self, resp: Any) -> None:
        assert resp.error_code == ErrorCode.none, resp
        self.epoch = resp.member_epoch
        if resp.assignment is not None:
            self.owned = {
                tp.topic_id: set(tp.partitions) for tp in resp.assignment.topic_partitions
            }

    def _owned(self) -> list[dict[str, Any]]:
        return [{"topic_id": t, "partitions": sorted(p)} for t, p in self.owned.items()]

    def partitions(self) -> set[int]:
        return {p for ps in self.owned.values() for p in ps}


async def _described(conn: BrokerConnection) -> Any:
    resp = await conn.call(
        ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[GROUP], include_authorized_operations=False
    )
    return resp.groups[0]


async def _converge(conn: BrokerConnection, members: list[Member], partitions: int) -> int:
    """Heartbeat until the group is stable with every partition owned; the group epoch."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        for m in members:
            m.apply(await m.beat(conn))
        group = await _described(conn)
        owned = sum(len(m.partitions()) for m in members)
        if (
            group.group_state == "Stable"
            and owned == partitions
            and all(m.epoch == group.group_epoch for m in members)
        ):
            return int(group.group_epoch)
        assert loop.time() < deadline, (group, [(m.epoch, m.owned) for m in members])
        await asyncio.sleep(0.1)


async def _two_static(conn: BrokerConnection, topics: tuple[str, ...] = ("foo",)) -> Any:
    a, b = Member("instance-a", topics), Member("instance-b", topics)
    a.apply(await a.beat(conn))
    b.apply(await b.beat(conn))
    epoch = await _converge(conn, [a, b], 6)
    return a, b, epoch


async def _leave(conn: BrokerConnection, *members: Member) -> None:
    for m in members:
        await m.beat(conn, -1)


def _run(endpoint: BrokerEndpoint, scenario: Scenario, topics: dict[str, int]) -> None:
    for name, count in topics.items():
        create_topic(endpoint.bootstrap, name, partitions=count)
    port = int(endpoint.bootstrap.rsplit(":", 1)[1])

    async def go() -> None:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            await scenario(conn)
        finally:
            await conn.close()

    asyncio.run(go())


def test_static_member_gets_back_its_assignment_upon_rejoin(any_broker: BrokerEndpoint) -> None:
    """testStaticMemberGetsBackAssignmentUponRejoin + testNoGroupEpochBumpWhenStatic
    MemberTemporarilyLeaves: epoch -2 answers -2 and keeps the group epoch; the same
    instance id under a new member id gets the same partitions at the same epoch."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        left = await b.beat(conn, -2)
        assert (left.error_code, left.member_id, left.member_epoch) == (
            ErrorCode.none,
            b.member_id,
            -2,
        )
        assert left.assignment is None
        group = await _described(conn)
        assert group.group_epoch == epoch
        assert {m.member_id: m.member_epoch for m in group.members}[b.member_id] == -2
        back = Member("instance-b", ("foo",))
        rejoined = await back.beat(conn)
        assert rejoined.error_code == ErrorCode.none, rejoined
        assert (rejoined.member_id, rejoined.member_epoch) == (back.member_id, epoch)
        back.apply(rejoined)
        assert back.owned == b.owned
        group = await _described(conn)
        assert group.group_epoch == epoch
        assert sorted(m.member_id for m in group.members) == sorted([a.member_id, back.member_id])
        kept = await a.beat(conn)  # the other member is not asked to reconcile
        assert (kept.error_code, kept.member_epoch, kept.assignment) == (
            ErrorCode.none,
            epoch,
            None,
        )
        await _leave(conn, a, back)

    _run(any_broker, scenario, {"foo": 6})


def test_static_member_rejoining_with_new_topics_bumps_the_epoch(
    any_broker: BrokerEndpoint,
) -> None:
    """testStaticMemberRejoinsWithNewSubscribedTopics: the rejoin keeps the old partitions
    and, subscribing to one more topic, starts a new group epoch that assigns it. Kafka's
    test expects the new member epoch in the rejoin's answer; Apache Kafka 4.3.1 may answer
    at the old one and assign later, so only the group epoch is checked at once."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        await b.beat(conn, -2)
        back = Member("instance-b", ("foo", "bar"))
        rejoined = await back.beat(conn)
        assert rejoined.error_code == ErrorCode.none, rejoined
        assert (await _described(conn)).group_epoch > epoch
        assert rejoined.member_epoch >= epoch  # Kafka 4.3.1 may answer before assigning
        foo = b.owned
        back.apply(rejoined)
        assert {t: p for t, p in back.owned.items() if t in foo} == foo  # kept its partitions
        await _converge(conn, [a, back], 9)
        assert len(back.owned) == 2  # foo and bar
        await _leave(conn, a, back)

    _run(any_broker, scenario, {"foo": 6, "bar": 3})


def test_leaving_static_member_bumps_the_group_epoch(any_broker: BrokerEndpoint) -> None:
    """testLeavingStaticMemberBumpsGroupEpoch: epoch -1 removes the static member for good."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        left = await b.beat(conn, -1)
        assert (left.error_code, left.member_id, left.member_epoch) == (
            ErrorCode.none,
            b.member_id,
            -1,
        )
        group = await _described(conn)
        assert group.group_epoch == epoch + 1
        assert [m.member_id for m in group.members] == [a.member_id]
        assert await _converge(conn, [a], 6) == epoch + 1
        await _leave(conn, a)

    _run(any_broker, scenario, {"foo": 6})


def test_unreleased_instance_id_when_a_new_member_takes_an_instance_in_use(
    any_broker: BrokerEndpoint,
) -> None:
    """testShouldThrownUnreleasedInstanceIdException...: a join with an instance id whose
    member has not left (-2) is refused, and the holder keeps it."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        refused = await Member("instance-a", ("foo",)).beat(conn)
        assert refused.error_code == ErrorCode.unreleased_instance_id
        kept = await a.beat(conn)
        assert (kept.error_code, kept.member_epoch) == (ErrorCode.none, epoch)
        group = await _described(conn)
        assert sorted(m.member_id for m in group.members) == sorted([a.member_id, b.member_id])
        await _leave(conn, a, b)

    _run(any_broker, scenario, {"foo": 6})


def test_unknown_static_member_heartbeating_is_unknown_member_id(
    any_broker: BrokerEndpoint,
) -> None:
    """testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins: a non-zero
    epoch from an instance id the group does not know."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        stranger = Member("instance-c", ("foo",))
        refused = await stranger.beat(conn, epoch)
        assert refused.error_code == ErrorCode.unknown_member_id
        await _leave(conn, a, b)

    _run(any_broker, scenario, {"foo": 6})


def test_fenced_instance_id_for_another_member_id_with_the_instance(
    any_broker: BrokerEndpoint,
) -> None:
    """testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins:
    a heartbeat at a non-zero epoch naming an instance held by another member id; also the
    old incarnation of a replaced static member, heartbeating or leaving."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        impostor = Member("instance-a", ("foo",))
        refused = await impostor.beat(conn, epoch + 1)
        assert refused.error_code == ErrorCode.fenced_instance_id
        await b.beat(conn, -2)
        back = Member("instance-b", ("foo",))
        back.apply(await back.beat(conn))
        assert (await b.beat(conn, epoch)).error_code == ErrorCode.fenced_instance_id
        assert (await b.beat(conn, -2)).error_code == ErrorCode.fenced_instance_id
        assert (await b.beat(conn, -1)).error_code == ErrorCode.fenced_instance_id
        assert (await back.beat(conn)).error_code == ErrorCode.none  # the new one is untouched
        await _leave(conn, a, back)

    _run(any_broker, scenario, {"foo": 6})


def test_static_member_epoch_validation(any_broker: BrokerEndpoint) -> None:
    """testConsumerGroupMemberEpochValidationForStaticMember: an epoch above the member's is
    fenced, and one below it too when it is not the previous epoch with owned partitions."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        assert (await a.beat(conn, epoch + 1)).error_code == ErrorCode.fenced_member_epoch
        lower = await a.beat(conn, epoch - 1, topic_partitions=None)
        assert lower.error_code == ErrorCode.fenced_member_epoch
        assert (await _described(conn)).group_epoch == epoch  # nothing changed
        await _leave(conn, a, b)

    _run(any_broker, scenario, {"foo": 6})


def test_static_leave_of_an_unknown_instance_is_unknown_member_id(
    any_broker: BrokerEndpoint,
) -> None:
    """A temporary leave (-2) naming an instance id the group has never seen."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        refused = await Member("instance-c", ("foo",)).beat(conn, -2)
        assert refused.error_code == ErrorCode.unknown_member_id
        assert (await _described(conn)).group_epoch == epoch
        await _leave(conn, a, b)

    _run(any_broker, scenario, {"foo": 6})


def test_temporary_leave_without_an_instance_id_is_an_invalid_request(
    any_broker: BrokerEndpoint,
) -> None:
    """testConsumerHeartbeatRequestValidation: epoch -2 needs an instance id, and an empty
    instance id is refused at join; the group is not touched."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        dynamic = Member(None, ("foo",))
        refused = await dynamic.beat(conn, -2)
        assert refused.error_code == ErrorCode.invalid_request
        assert refused.error_message == "InstanceId can't be null."
        empty = await Member("", ("foo",)).beat(conn)
        assert empty.error_code == ErrorCode.invalid_request
        assert empty.error_message == "InstanceId can't be empty."
        assert (await _described(conn)).group_epoch == epoch
        await _leave(conn, a, b)

    _run(any_broker, scenario, {"foo": 6})


def test_static_member_heartbeating_after_its_temporary_leave_is_fenced(
    any_broker: BrokerEndpoint,
) -> None:
    """A member that sent -2 is kept at epoch -2: its heartbeat at its old epoch is above
    that (Kafka's epoch validation) and is fenced; it must rejoin with epoch 0."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        await b.beat(conn, -2)
        late = await b.beat(conn, epoch)
        assert late.error_code == ErrorCode.fenced_member_epoch, late
        again = Member("instance-b", ("foo",))
        again.member_id = b.member_id  # the same incarnation rejoins
        rejoined = await again.beat(conn)
        assert (rejoined.error_code, rejoined.member_epoch) == (ErrorCode.none, epoch), rejoined
        again.apply(rejoined)
        assert again.owned == b.owned
        await _leave(conn, a, again)

    _run(any_broker, scenario, {"foo": 6})


def test_active_static_member_rejoining_under_its_own_member_id(
    any_broker: BrokerEndpoint,
) -> None:
    """Epoch 0 from the member that holds the instance id (a client that lost its state):
    Kafka answers as it does for any join of an instance in use."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        again = await a.beat(conn, 0, rebalance_timeout=30_000, subscribed_topic_names=["foo"])
        assert again.error_code == ErrorCode.unreleased_instance_id, again
        assert (await _described(conn)).group_epoch == epoch
        await _leave(conn, a, b)

    _run(any_broker, scenario, {"foo": 6})


def test_temporarily_left_member_repeats_its_leave_then_leaves_for_good(
    any_broker: BrokerEndpoint,
) -> None:
    """A second -2 from the member that is away answers as the first (a shutdown retried);
    a -1 from it then removes it: the group epoch bumps and the other member gets all."""

    async def scenario(conn: BrokerConnection) -> None:
        a, b, epoch = await _two_static(conn)
        await b.beat(conn, -2)
        again = await b.beat(conn, -2)
        assert (again.error_code, again.member_epoch) == (ErrorCode.none, -2), again
        assert (await _described(conn)).group_epoch == epoch
        gone = await b.beat(conn, -1)
        assert (gone.error_code, gone.member_epoch) == (ErrorCode.none, -1), gone
        group = await _described(conn)
        assert group.group_epoch == epoch + 1
        assert [m.member_id for m in group.members] == [a.member_id]
        assert await _converge(conn, [a], 6) == epoch + 1
        await _leave(conn, a)

    _run(any_broker, scenario, {"foo": 6})
