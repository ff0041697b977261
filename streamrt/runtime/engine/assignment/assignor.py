"""StreamsPartitionAssignor: a state-aware, sticky, co-partitioning assignor (pure logic).

Every thread of every instance is one group member. Its subscription user data says which
instance and thread it is, where the instance's REST endpoint is, which tasks it ran last and
which tasks it has state for on disk (with the changelog offsets reached). The leader assigns
tasks (not partitions) so co-partitioned inputs stay together, keeps tasks where they were,
then where their state is, then balances; the assignment user data carries the whole
cluster's metadata so each instance knows every other one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from streamrt.logs import fields
from streamrt.runtime.engine.assignment.placement import (
    PlacementConfig,
    TaskPlacement,
    assign_tasks,
    place_tasks,
)
from streamrt.topic_partition import TopicPartition

__all__ = (
    "ASSIGNOR_NAME",
    "AssignmentInfo",
    "ClusterThread",
    "PlacementConfig",
    "StreamsPartitionAssignor",
    "SubscriptionInfo",
    "TaskPlacement",
    "assign_tasks",
    "place_tasks",
)

logger = logging.getLogger(__name__)

ASSIGNOR_NAME = "streamrt"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class SubscriptionInfo:
    """What one thread tells the leader when it joins."""

    instance_id: str
    thread_instance_id: str
    application_server: str | None = None
    previous_tasks: tuple[str, ...] = ()
    task_offsets: Mapping[str, int] = field(default_factory=dict)  # task id → sum of offsets
    previous_standbys: tuple[str, ...] = ()

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": _VERSION,
                "instance_id": self.instance_id,
                "thread_instance_id": self.thread_instance_id,
                "application_server": self.application_server,
                "previous_tasks": list(self.previous_tasks),
                "task_offsets": dict(self.task_offsets),
                "previous_standbys": list(self.previous_standbys),
            }
        ).encode()

    @classmethod
    def decode(cls, data: bytes, member_id: str) -> SubscriptionInfo:
        """A member without our user data (another client), or with fields of the wrong
        shape, is treated as a stateless thread: the leader's placement hashes and compares
        these fields, and one member's bad join must not stop the group's assignment."""
        try:
            raw = json.loads(data)
            server = raw.get("application_server")
            offsets = raw.get("task_offsets", {})
            if not isinstance(offsets, dict) or not isinstance(server, str | None):
                raise TypeError("task_offsets or application_server")
            return cls(
                str(raw["instance_id"]),
                str(raw["thread_instance_id"]),
                server,
                _task_ids(raw.get("previous_tasks", [])),
                {str(k): int(v) for k, v in offsets.items()},
                _task_ids(raw.get("previous_standbys", [])),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning(
                "subscription user data not understood: the member counts as a stateless thread",
                extra=fields(member=member_id, error=repr(exc)),
            )
            return cls(member_id, member_id)


def _task_ids(value: object) -> tuple[str, ...]:
    """A JSON list of task id strings, else :class:`TypeError`."""
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise TypeError(f"not a list of task ids: {value!r}")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class ClusterThread:
    """One thread of the cluster as the assignment describes it."""

    instance_id: str
    thread_instance_id: str
    application_server: str | None
    tasks: tuple[str, ...]
    partitions: tuple[TopicPartition, ...]
    standby_tasks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AssignmentInfo:
    """What a thread receives: its tasks, its standby tasks (warm-ups included), and the whole
    cluster's metadata."""

    tasks: tuple[str, ...]
    cluster: tuple[ClusterThread, ...]
    stores: Mapping[str, tuple[str, ...]]  # subtopology id → store names
    standby_tasks: tuple[str, ...] = ()
    # cooperative: some task waits for its previous owner to revoke it, so a second round
    # follows; until then the assignment is not complete (the thread stays PARTITIONS_ASSIGNED)
    followup: bool = False

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": _VERSION,
                "tasks": list(self.tasks),
                "cluster": [
                    {
                        "instance_id": t.instance_id,
                        "thread_instance_id": t.thread_instance_id,
                        "application_server": t.application_server,
                        "tasks": list(t.tasks),
                        "partitions": [list(p) for p in t.partitions],
                        "standby_tasks": list(t.standby_tasks),
                    }
                    for t in self.cluster
                ],
                "stores": {k: list(v) for k, v in self.stores.items()},
                "standby_tasks": list(self.standby_tasks),
                "followup": self.followup,
            }
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> AssignmentInfo:
        raw = json.loads(data)
        return cls(
            tuple(raw["tasks"]),
            tuple(
                ClusterThread(
                    c["instance_id"],
                    c["thread_instance_id"],
                    c.get("application_server"),
                    tuple(c["tasks"]),
                    tuple(TopicPartition(str(t), int(p)) for t, p in c["partitions"]),
                    tuple(c.get("standby_tasks", ())),
                )
                for c in raw["cluster"]
            ),
            {str(k): tuple(v) for k, v in raw.get("stores", {}).items()},
            tuple(raw.get("standby_tasks", ())),
            bool(raw.get("followup", False)),
        )


class StreamsPartitionAssignor:
    """The task assignment over
    :func:`~streamrt.runtime.engine.assignment.placement.place_tasks`; one instance per stream
    thread. streamrt's group member reaches it through
    :class:`~streamrt.runtime.engine.assignment.member_assignor.MemberStreamsAssignor`.

    :param subtopologies: sub-topology id → its source topics (co-partitioned).
    :param stores: sub-topology id → its store names (published in the metadata).
    :param subscription: called at each join for this thread's current subscription info.
    :param on_info: receives this thread's decoded :class:`AssignmentInfo`.
    :param on_leader: called with ``(members, tasks)`` when this thread, as the group
        leader, computed an assignment (operators and the deploy report want to know which
        instance leads).
    :param placement: standby and warm-up settings.
    :param on_placement: called with the leader's :class:`TaskPlacement` (the thread schedules
        a probing rebalance when it has warm-ups).
    :param task_ends: stateful task ids → each one's changelog end-offset sum (the lag
        reference, :class:`~streamrt.runtime.engine.restore.changelog_ends.ChangelogEnds`).
    """

    def __init__(
        self,
        subtopologies: Mapping[int, tuple[str, ...]],
        stores: Mapping[int, tuple[str, ...]],
        subscription: Callable[[], SubscriptionInfo],
        on_info: Callable[[AssignmentInfo], None],
        on_leader: Callable[[int, int], None] | None = None,
        placement: PlacementConfig | None = None,
        on_placement: Callable[[TaskPlacement], None] | None = None,
        task_ends: Callable[[Iterable[str]], Mapping[str, int]] | None = None,
    ) -> None:
        self.subtopologies = dict(subtopologies)
        self.stores = {str(k): tuple(v) for k, v in stores.items()}
        self._subscription = subscription
        self._on_info = on_info
        self._on_leader = on_leader
        self.placement = placement or PlacementConfig()
        self._on_placement = on_placement
        self._task_ends = task_ends

    def subscription_user_data(self) -> bytes:
        """This thread's :class:`SubscriptionInfo`, encoded (asked at each join)."""
        return self._subscription().encode()

    def on_info(self, info: AssignmentInfo) -> None:
        """This thread's decoded assignment user data arrived."""
        self._on_info(info)

    def tasks_of(self, counts: Mapping[str, int]) -> dict[str, list[TopicPartition]]:
        """Task id → its input partitions, from each source topic's partition count."""
        out: dict[str, list[TopicPartition]] = {}
        for sub, topics in sorted(self.subtopologies.items()):
            per_topic = [counts.get(t, 0) for t in topics]
            for partition in range(max(per_topic, default=0)):
                out[f"{sub}_{partition}"] = [
                    TopicPartition(t, partition)
                    for t, n in zip(topics, per_topic, strict=True)
                    if partition < n
                ]
        return out

    def plan(
        self, task_parts: Mapping[str, list[TopicPartition]], infos: Mapping[str, SubscriptionInfo]
    ) -> dict[str, tuple[list[TopicPartition], AssignmentInfo]]:
        """Member id → (its partitions, its :class:`AssignmentInfo`); the leader's callbacks
        (``on_leader``, ``on_placement``) run here."""
        stateful = [t for t in task_parts if self.stores.get(t.partition("_")[0])]
        ends = self._task_ends(stateful) if self._task_ends is not None else None
        plan = place_tasks(dict(task_parts), dict(infos), stateful, self.placement, ends)
        by_member = plan.active
        cluster_threads = tuple(
            ClusterThread(
                infos[m].instance_id,
                infos[m].thread_instance_id,
                infos[m].application_server,
                tuple(by_member[m]),
                tuple(p for t in by_member[m] for p in task_parts[t]),
                tuple(plan.standby.get(m, ())),
            )
            for m in by_member
        )
        out = {
            member: (
                [p for t in tasks for p in task_parts[t]],
                AssignmentInfo(
                    tuple(tasks), cluster_threads, self.stores, tuple(plan.standby.get(member, ()))
                ),
            )
            for member, tasks in by_member.items()
        }
        if self._on_leader is not None:
            self._on_leader(len(infos), len(task_parts))
        if self._on_placement is not None:
            self._on_placement(plan)
        return out
