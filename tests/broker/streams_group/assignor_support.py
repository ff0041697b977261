"""Helpers for the task assignor tests: a plain TopologyDescriber and spec builders."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streamrt.broker.streams_group.task_assignor import (
    AssignmentMemberSpec,
    GroupAssignment,
    GroupSpec,
    assign,
)
from streamrt.broker.streams_group.topology import TaskIds


@dataclasses.dataclass(frozen=True)
class Topology:
    """Subtopology id -> task count, and which subtopologies are stateful."""

    tasks: Mapping[str, int]
    stateful: frozenset[str] = frozenset()

    def subtopologies(self) -> list[str]:
        return list(self.tasks)

    def max_num_input_partitions(self, subtopology_id: str) -> int:
        return self.tasks[subtopology_id]

    def is_stateful(self, subtopology_id: str) -> bool:
        return subtopology_id in self.stateful


def stateless(**tasks: int) -> Topology:
    return Topology(tasks)


def stateful(**tasks: int) -> Topology:
    return Topology(tasks, frozenset(tasks))


def tasks(**parts: set[int]) -> TaskIds:
    return {sub: frozenset(ps) for sub, ps in parts.items()}


def member(
    process: str,
    active: TaskIds | None = None,
    standby: TaskIds | None = None,
    warmup: TaskIds | None = None,
    instance_id: str | None = None,
) -> AssignmentMemberSpec:
    return AssignmentMemberSpec(
        instance_id=instance_id,
        process_id=process,
        active_tasks=active or {},
        standby_tasks=standby or {},
        warmup_tasks=warmup or {},
    )


def run(
    members: Mapping[str, AssignmentMemberSpec], topology: Topology, standbys: int = 0
) -> GroupAssignment:
    return assign(GroupSpec(members, standbys), topology)


def flat(task_ids: TaskIds) -> set[tuple[str, int]]:
    return {(sub, p) for sub, ps in task_ids.items() for p in ps}


def active_count(result: GroupAssignment, member_id: str) -> int:
    return len(flat(result.members[member_id].active))


def all_active(result: GroupAssignment) -> list[tuple[str, int]]:
    return sorted(t for m in result.members.values() for t in flat(m.active))


def as_previous(
    result: GroupAssignment, processes: Mapping[str, str]
) -> dict[str, AssignmentMemberSpec]:
    """The next round's input: every member reports what this round gave it."""
    return {
        m: member(processes[m], a.active, a.standby)
        for m, a in result.members.items()
        if m in processes
    }
