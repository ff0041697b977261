"""The classic and the consumer-group coordinators side by side on one manual clock and timer,
with the service's routing (``classic_in_consumer``, ``migration``) but no sockets: classic
JoinGroup/SyncGroup/Heartbeat go to whichever coordinator holds the group, and a
ConsumerGroupHeartbeat may upgrade a classic group first, as ``GroupCoordinatorService`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.group import ConsumerGroup
from streamrt.broker.consumer_group.requests import HeartbeatAnswer, HeartbeatRequest
from streamrt.broker.consumer_group_config import ConsumerGroupConfig
from streamrt.broker.coordination.result import Result
from streamrt.broker.group import classic_in_consumer, migration
from streamrt.broker.group.group import ClassicGroup
from streamrt.broker.group.state import GroupState
from streamrt.broker.streams_group.coordinator import StreamsGroupCoordinator
from streamrt.broker.streams_group_config import StreamsGroupConfig
from streamrt.errors import ErrorCode
from streamrt.membership.protocol import encode_assignment, encode_subscription
from streamrt.topic_partition import TopicPartition
from tests.broker.group.context import CoordinatorTestContext, Pending

GROUP = "g"
TOPIC = "t"
TOPIC_ID = uuid.UUID(int=7)


def subscription(owned: Iterable[int] = (), topics: tuple[str, ...] = (TOPIC,)) -> bytes:
    return encode_subscription(topics, owned_partitions=[TopicPartition(TOPIC, p) for p in owned])


def assignment(partitions: Iterable[int]) -> bytes:
    return encode_assignment([TopicPartition(TOPIC, p) for p in partitions])


class Mixed(CoordinatorTestContext):
    def __init__(self, partitions: int = 4, **consumer_config: Any) -> None:
        super().__init__()
        self.topics = {TOPIC: partitions}
        self.consumer = ConsumerGroupCoordinator(
            ConsumerGroupConfig(**consumer_config),
            self.clock,
            self.timer,
            lambda: dict(self.topics),
            lambda: {TOPIC: TOPIC_ID},
            downgrade=migration.Downgrader(self.coordinator),
        )
        self.streams = StreamsGroupCoordinator(
            StreamsGroupConfig(), self.timer, lambda: dict(self.topics)
        )

    # -- the classic APIs, routed by group type ----------------------------------------------

    def join(  # type: ignore[override]
        self, group_id: str = GROUP, member_id: str = "", instance_id: str | None = None, **kw: Any
    ) -> Pending:
        version = kw.pop("version", 9)
        protocols = kw.pop("protocols", (("range", subscription()),))
        request = self.request(
            11,
            version,
            group_id=group_id,
            session_timeout=kw.pop("session_ms", 10_000),
            rebalance_timeout=kw.pop("rebalance_ms", 10_000),
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=kw.pop("protocol_type", "consumer"),
            protocols=[{"name": n, "metadata": m} for n, m in protocols],
            reason=None,
        )
        pending = Pending()
        result = classic_in_consumer.route_join(
            self.coordinator, self.consumer, self.streams, self.ctx(11, version), request, pending
        )
        self.apply(result, pending)
        return pending

    def sync(  # type: ignore[override]
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        instance_id: str | None = None,
        assignments: dict[str, bytes] | None = None,
    ) -> Pending:
        request = self.request(
            14,
            5,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[{"member_id": k, "assignment": v} for k, v in (assignments or {}).items()],
        )
        pending = Pending()
        result = classic_in_consumer.route_sync(
            self.coordinator, self.consumer, self.ctx(14, 5), request, pending
        )
        self.apply(result, pending)
        return pending

    def heartbeat(  # type: ignore[override]
        self, group_id: str, member_id: str, generation_id: int, instance_id: str | None = None
    ) -> ErrorCode:
        request = self.request(
            12,
            4,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=instance_id,
        )
        pending = Pending()
        result = classic_in_consumer.route_heartbeat(
            self.coordinator, self.consumer, self.ctx(12, 4), request
        )
        self.apply(result, pending)
        return pending.error

    # -- the consumer protocol ---------------------------------------------------------------

    def consumer_heartbeat(self, request: HeartbeatRequest) -> HeartbeatAnswer:
        """What ``GroupCoordinatorService.consumer_heartbeat`` does, minus the lock and log."""
        upgrade = migration.maybe_upgrade(self.coordinator, self.consumer, request)
        now = self.coordinator.groups.get(request.group_id)
        taken = now is not None and not now.is_in(GroupState.EMPTY)
        answer = self.consumer.heartbeat(request, taken)
        if upgrade is not None:
            self.apply(Result(completions=upgrade.completions))
            if answer.error is ErrorCode.none:
                self.log.extend(upgrade.records)
            else:
                migration.undo(self.coordinator, self.consumer, GROUP, None, upgrade.group)
        self.log.extend(answer.records)
        return answer

    def consumer_join(self, member_id: str, instance_id: str | None = None) -> HeartbeatAnswer:
        return self.consumer_heartbeat(
            HeartbeatRequest(
                GROUP,
                member_id,
                0,
                instance_id=instance_id,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=(TOPIC,),
                owned={},
            )
        )

    def consumer_beat(self, member_id: str, epoch: int, owned: set[int]) -> HeartbeatAnswer:
        return self.consumer_heartbeat(
            HeartbeatRequest(GROUP, member_id, epoch, owned={TOPIC: frozenset(owned)})
        )

    # -- looking ---------------------------------------------------------------------------------

    @property
    def cgroup(self) -> ConsumerGroup:
        return self.consumer.groups[GROUP]

    @property
    def classic(self) -> ClassicGroup:
        return self.coordinator.groups[GROUP]

    def held(self) -> dict[int, list[str]]:
        """Partition -> the members the consumer group counts as holding it."""
        out: dict[int, list[str]] = {}
        for member in self.cgroup.members.values():
            for p in member.held().get(TOPIC, frozenset()):
                out.setdefault(p, []).append(member.member_id)
        return out


def stable_classic_group(ctx: Mixed, *instances: str | None) -> list[tuple[str, int]]:
    """A classic group of len(instances) members (static where an instance id is given) that
    split the topic's partitions: [(member id, generation)]."""
    pendings = []
    for instance in instances:
        p = ctx.join(instance_id=instance)
        if p.done and p.error is ErrorCode.member_id_required:
            p = ctx.join(member_id=p.response.member_id, instance_id=instance)
        pendings.append((p, instance))
    for _ in range(30):  # the initial window extends while members arrive
        if all(p.done for p, _ in pendings):
            break
        ctx.sleep(1_000)
    members = [(p.response.member_id, p.response.generation_id) for p, _ in pendings]
    leader = ctx.classic.leader_id
    n = len(members)
    split = {
        mid: assignment({q for q in range(ctx.topics[TOPIC]) if q % n == i})
        for i, (mid, _) in enumerate(members)
    }
    for (mid, gen), (_, instance) in zip(members, pendings, strict=True):
        ctx.sync(GROUP, mid, gen, instance, split if mid == leader else None)
    assert ctx.classic.is_in(GroupState.STABLE)
    return members
