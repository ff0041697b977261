"""The StreamsPartitionAssignor's face for streamrt's own group member (``streamrt.membership``).

The placement, user data and protocol name of the
:class:`~streamrt.runtime.engine.assignment.assignor.StreamsPartitionAssignor` (stickiness,
standbys, warm-ups and probing rebalances). The leader also holds back every partition
another member still owns (KIP-429's first round) and drops, from the receiving member's task
list, each task whose partitions are not all handed over yet: the task moves in the second
round, once its previous owner closed it, as Kafka Streams does.

The leader does so whatever its own protocol, as Kafka Streams' assignor does: during the
rolling bounce that removes ``upgrade.from``, an eager-configured leader may be assigning to
cooperative members that keep their partitions through the join. Eager members revoke all
before joining and report nothing owned, so in an all-eager group nothing is held back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streamrt.membership.assignment import MemberSubscription, cooperative_adjust
from streamrt.runtime.engine.assignment.assignor import (
    ASSIGNOR_NAME,
    AssignmentInfo,
    StreamsPartitionAssignor,
    SubscriptionInfo,
)
from streamrt.topic_partition import TopicPartition

__all__ = ("MemberStreamsAssignor",)


class MemberStreamsAssignor:
    """:class:`~streamrt.membership.assignment.UserDataAssignor` over the runtime's assignor."""

    name = ASSIGNOR_NAME

    def __init__(self, streams: StreamsPartitionAssignor) -> None:
        self.streams = streams
        self._user_data: dict[str, bytes] = {}

    def subscription_user_data(self) -> bytes | None:
        return self.streams.subscription_user_data()

    def on_assignment(self, user_data: bytes | None) -> None:
        if user_data:
            self.streams.on_info(AssignmentInfo.decode(user_data))

    def assignment_user_data(self, member_id: str) -> bytes | None:
        return self._user_data.get(member_id)

    def assign(
        self, members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]
    ) -> dict[str, set[TopicPartition]]:
        infos = {
            m: SubscriptionInfo.decode(s.subscription.user_data or b"", m)
            for m, s in members.items()
        }
        task_parts = self.streams.tasks_of(partitions_per_topic)
        planned = self.streams.plan(task_parts, infos)
        target = {m: set(parts) for m, (parts, _info) in planned.items()}
        for member in members:
            target.setdefault(member, set())
        target = cooperative_adjust({m: s.subscription for m, s in members.items()}, target)
        given = {
            m: _held_back(info, task_parts, target.get(m, set()))
            for m, (_parts, info) in planned.items()
        }
        followup = any(given[m].tasks != info.tasks for m, (_p, info) in planned.items())
        self._user_data = {
            m: dataclasses.replace(info, followup=followup).encode() for m, info in given.items()
        }
        return target


def _held_back(
    info: AssignmentInfo,
    task_parts: Mapping[str, list[TopicPartition]],
    partitions: set[TopicPartition],
) -> AssignmentInfo:
    """``info`` without the tasks whose input partitions are not all in ``partitions``."""
    tasks = tuple(t for t in info.tasks if all(tp in partitions for tp in task_parts[t]))
    if tasks == info.tasks:
        return info
    return AssignmentInfo(tasks, info.cluster, info.stores, info.standby_tasks)
