"""The streams group's sticky task assignor (Kafka's ``StickyTaskAssignor``, KIP-1071).

A pure function from the members (their process, and the tasks they held as active, standby
or warm-up) and a ``TopologyDescriber`` (subtopologies, tasks per subtopology, statefulness) to
every member's active and standby tasks. Written from Kafka's documented behaviour:

* actives stay with their previous owner while it is under its quota, then go to a member that
  held the task as standby (or warm-up), then to the least-loaded process and within it the
  least-loaded member, so load is balanced across processes first, then members; stateful and
  stateless actives are balanced separately (stateful first);
* standbys, ``num.standby.replicas`` of each, only for stateful subtopologies, never on the
  process that has the task already, sticky to the previous active owner and standby holders;
  if there are too few processes, fewer standbys are placed;
* ties are broken by process id and member id, so equal input gives equal output.

A member keeps its process id across a restart (and a static member its instance id), so its
previous tasks, reported in the heartbeat, come back to it. Rack-aware standby placement and
warm-up tasks (Kafka's later additions) are not done here: warm-up tasks count as standbys for
stickiness and the result has none.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterable, Mapping
from typing import Protocol

from streamrt.broker.streams_group.topology import TaskIds

__all__ = (
    "AssignmentMemberSpec",
    "GroupAssignment",
    "GroupSpec",
    "MemberAssignment",
    "TaskAssignorError",
    "TopologyDescriber",
    "assign",
)

TaskId = tuple[str, int]


class TaskAssignorError(Exception):
    """The input cannot be assigned (a negative standby count)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AssignmentMemberSpec:
    """What the assignor knows of one member; the tasks are its current target assignment."""

    instance_id: str | None = None
    rack_id: str | None = None
    process_id: str
    active_tasks: TaskIds = dataclasses.field(default_factory=dict)
    standby_tasks: TaskIds = dataclasses.field(default_factory=dict)
    warmup_tasks: TaskIds = dataclasses.field(default_factory=dict)
    client_tags: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class GroupSpec:
    """The group's members by member id, and ``num.standby.replicas``."""

    members: Mapping[str, AssignmentMemberSpec]
    num_standby_replicas: int = 0


class TopologyDescriber(Protocol):
    """The topology as the assignor sees it (``ConfiguredTopology`` is one)."""

    def subtopologies(self) -> Iterable[str]: ...

    def max_num_input_partitions(self, subtopology_id: str) -> int: ...

    def is_stateful(self, subtopology_id: str) -> bool: ...


@dataclasses.dataclass(frozen=True, slots=True)
class MemberAssignment:
    """One member's new target assignment (subtopology id -> partitions)."""

    active: TaskIds = dataclasses.field(default_factory=dict)
    standby: TaskIds = dataclasses.field(default_factory=dict)
    warmup: TaskIds = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class GroupAssignment:
    """Every member's new target assignment, by member id."""

    members: Mapping[str, MemberAssignment]


class _Quota:
    """Kafka's per-member quota: ``ceil(tasks / members)``, recomputed each time a member
    reaches it, so the remaining tasks spread over the members still below it."""

    def __init__(self, tasks: int, members: int) -> None:
        self.tasks = tasks
        self.members = members
        self.per_member = self._compute()

    def _compute(self) -> int:
        return math.ceil(self.tasks / self.members) if self.members > 0 else 0

    def note(self, member_count: int) -> None:
        """A member now holds ``member_count`` tasks; at the quota it leaves the pool."""
        if member_count == self.per_member:
            self.members -= 1
            self.tasks -= member_count
            self.per_member = self._compute()


class _Process:
    """The tasks assigned so far to one process (a Streams instance) and to its members."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.counts: dict[str, int] = {}
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.tasks: set[TaskId] = set()
        self.stateless_actives = 0

    def add_member(self, member_id: str) -> None:
        self.counts[member_id] = 0
        self.active[member_id] = set()
        self.standby[member_id] = set()

    def load(self) -> float:
        """Tasks per member: processes with more members (threads) take more."""
        return len(self.tasks) / len(self.counts)

    def stateless_load(self) -> float:
        return self.stateless_actives / len(self.counts)

    def least_loaded_member(self) -> str:
        return min(self.counts, key=lambda m: (self.counts[m], m))

    def add(self, member_id: str, task: TaskId, *, active: bool, stateful: bool = True) -> int:
        """Give ``task`` to the member; returns the member's new task count."""
        (self.active if active else self.standby)[member_id].add(task)
        self.tasks.add(task)
        if active and not stateful:
            self.stateless_actives += 1
        self.counts[member_id] += 1
        return self.counts[member_id]


@dataclasses.dataclass(frozen=True, slots=True)
class _Member:
    process_id: str
    member_id: str


class _State:
    """One assignment run: the processes, previous owners and the three quotas."""

    def __init__(self, group: GroupSpec, topology: TopologyDescriber) -> None:
        self.standbys = group.num_standby_replicas
        self.stateful: list[TaskId] = []
        self.stateless: list[TaskId] = []
        for sub in sorted(topology.subtopologies()):
            tasks = [(sub, p) for p in range(topology.max_num_input_partitions(sub))]
            (self.stateful if topology.is_stateful(sub) else self.stateless).extend(tasks)
        n = len(group.members)
        actives = len(self.stateful) + len(self.stateless)
        self.stateful_quota = _Quota(len(self.stateful), n)
        self.active_quota = _Quota(actives, n)
        self.total_quota = _Quota(actives + len(self.stateful) * self.standbys, n)
        self.processes: dict[str, _Process] = {}
        self.prev_active: dict[TaskId, _Member] = {}
        self.prev_standby: dict[TaskId, list[_Member]] = {}
        for member_id in sorted(group.members):
            spec = group.members[member_id]
            member = _Member(spec.process_id, member_id)
            process = self.processes.setdefault(spec.process_id, _Process(spec.process_id))
            process.add_member(member_id)
            for task in _task_list(spec.active_tasks):
                self.prev_active.setdefault(task, member)
            for task in _task_list(spec.standby_tasks) + _task_list(spec.warmup_tasks):
                holders = self.prev_standby.setdefault(task, [])
                if member not in holders:
                    holders.append(member)

    def process_of(self, member: _Member) -> _Process:
        return self.processes[member.process_id]

    def add_active(self, member: _Member, task: TaskId, stateful: bool) -> None:
        count = self.process_of(member).add(member.member_id, task, active=True, stateful=stateful)
        if stateful:
            self.stateful_quota.note(count)
        self.active_quota.note(count)
        self.total_quota.note(count)

    def add_standby(self, process: _Process, member_id: str, task: TaskId) -> None:
        self.total_quota.note(process.add(member_id, task, active=False))

    def under(self, member: _Member, quota: _Quota) -> bool:
        return self.process_of(member).counts[member.member_id] < quota.per_member

    def least_loaded_prev(self, task: TaskId, *, skip_holders: bool) -> _Member | None:
        """Among the task's previous standby holders, Kafka's pick: the first, replaced by one
        whose process and member are both less loaded (a process already holding the task is
        skipped when placing a standby)."""
        best: _Member | None = None
        best_loads = (math.inf, math.inf)
        for member in self.prev_standby.get(task, ()):
            process = self.process_of(member)
            if skip_holders and task in process.tasks:
                continue
            loads = (process.load(), float(process.counts[member.member_id]))
            if best is None or (loads[0] < best_loads[0] and loads[1] < best_loads[1]):
                best, best_loads = member, loads
        return best


def _task_list(tasks: TaskIds) -> list[TaskId]:
    return [(sub, p) for sub in sorted(tasks) for p in sorted(tasks[sub])]


def _assign_active(state: _State, tasks: list[TaskId], stateful: bool) -> None:
    """Place one flavour of actives: previous owner, previous standby, then least loaded."""
    quota = state.stateful_quota if stateful else state.active_quota
    left: list[TaskId] = []
    for task in sorted(tasks, key=lambda t: (t[1], t[0])):
        owner = state.prev_active.get(task)
        if owner is not None and state.under(owner, quota):
            state.add_active(owner, task, stateful)
        else:
            left.append(task)
    rest: list[TaskId] = []
    for task in left:
        holder = state.least_loaded_prev(task, skip_holders=False)
        if holder is not None and state.under(holder, quota):
            state.add_active(holder, task, stateful)
        else:
            rest.append(task)
    # least-loaded process first, then the fewest stateless actives (so stateless tasks fill
    # processes heavy on stateful ones), then process id; only the popped entry changes
    heap = [(p.load(), p.stateless_load(), p.process_id) for p in state.processes.values()]
    heapq.heapify(heap)
    for task in sorted(rest):
        process = state.processes[heapq.heappop(heap)[2]]
        count = process.add(process.least_loaded_member(), task, active=True, stateful=stateful)
        state.active_quota.note(count)
        state.total_quota.note(count)
        heapq.heappush(heap, (process.load(), process.stateless_load(), process.process_id))


def _sticky_standbys(state: _State, task: TaskId) -> int:
    """Place the task's standbys on previous holders under quota; returns how many are left."""
    for placed in range(state.standbys):
        owner = state.prev_active.get(task)
        if owner is not None:
            process = state.process_of(owner)
            if task not in process.tasks and state.under(owner, state.total_quota):
                state.add_standby(process, owner.member_id, task)
                continue
        holder = state.least_loaded_prev(task, skip_holders=True)
        if holder is not None and state.under(holder, state.total_quota):
            state.add_standby(state.process_of(holder), holder.member_id, task)
            continue
        return state.standbys - placed
    return 0


def _assign_standby(state: _State) -> None:
    """Standbys of the stateful tasks: sticky first, the rest to the least-loaded processes
    that do not hold the task yet."""
    remaining: list[tuple[TaskId, int]] = []
    for task in sorted(state.stateful, key=lambda t: (t[1], t[0]), reverse=True):
        left = _sticky_standbys(state, task)
        if left:
            remaining.append((task, left))
    heap = [(p.load(), p.process_id) for p in state.processes.values()]
    heapq.heapify(heap)
    for task, left in sorted(remaining, reverse=True):
        for _ in range(left):
            if not _standby_to_least_loaded(state, heap, task):
                break  # fewer processes than replicas + 1: place what fits


def _standby_to_least_loaded(state: _State, heap: list[tuple[float, str]], task: TaskId) -> bool:
    """Give a standby of ``task`` to the least-loaded process without a copy of it."""
    skipped: list[tuple[float, str]] = []
    placed = False
    while heap:
        entry = heapq.heappop(heap)
        process = state.processes[entry[1]]
        if task in process.tasks:
            skipped.append(entry)
            continue
        state.add_standby(process, process.least_loaded_member(), task)
        skipped.append((process.load(), process.process_id))
        placed = True
        break
    for entry in skipped:
        heapq.heappush(heap, entry)
    return placed


def _compact(tasks: set[TaskId]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for sub, partition in tasks:
        out.setdefault(sub, set()).add(partition)
    return {sub: frozenset(ps) for sub, ps in sorted(out.items())}


def assign(group: GroupSpec, topology: TopologyDescriber) -> GroupAssignment:
    """Compute every member's active and standby tasks (see the module docstring).

    An empty group gets an empty assignment: there is nobody to give the tasks to.
    """
    if group.num_standby_replicas < 0:
        raise TaskAssignorError(
            f"num.standby.replicas must be >= 0, got {group.num_standby_replicas}"
        )
    if not group.members:
        return GroupAssignment({})
    state = _State(group, topology)
    _assign_active(state, state.stateful, True)
    _assign_active(state, state.stateless, False)
    if state.standbys > 0:
        _assign_standby(state)
    members: dict[str, MemberAssignment] = {}
    for member_id in sorted(group.members):
        process = state.processes[group.members[member_id].process_id]
        members[member_id] = MemberAssignment(
            active=_compact(process.active[member_id]),
            standby=_compact(process.standby[member_id]),
        )
    return GroupAssignment(members)
