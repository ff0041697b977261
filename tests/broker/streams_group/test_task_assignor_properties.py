"""Properties of the sticky task assignor over random groups (hypothesis): every task active
exactly once, standbys only for stateful tasks and never beside a copy of the task, as many
standbys as processes allow, equal input gives equal output, and balance within one task."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from streamrt.broker.streams_group.task_assignor import (
    AssignmentMemberSpec,
    GroupAssignment,
    GroupSpec,
    assign,
)
from streamrt.broker.streams_group.topology import TaskIds
from tests.broker.streams_group.assignor_support import Topology, flat, member

TaskId = tuple[str, int]


@st.composite
def topologies(draw: st.DrawFn) -> Topology:
    names = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True))
    tasks = {n: draw(st.integers(0, 9)) for n in names}
    stateful = frozenset(n for n in names if draw(st.booleans()))
    return Topology(tasks, stateful)


def _pack(picked: list[TaskId]) -> TaskIds:
    out: dict[str, set[int]] = {}
    for sub, p in picked:
        out.setdefault(sub, set()).add(p)
    return {s: frozenset(ps) for s, ps in out.items()}


@st.composite
def groups(
    draw: st.DrawFn, topology: Topology, one_member_per_process: bool = False
) -> dict[str, AssignmentMemberSpec]:
    """Members on random processes, each reporting random (possibly stale or overlapping)
    previous tasks, including tasks of subtopologies that no longer exist."""
    every = [(s, p) for s, n in topology.tasks.items() for p in range(n + 1)]
    count = draw(st.integers(1, 8))
    members = {}
    for i in range(count):
        process = f"p{i}" if one_member_per_process else f"p{draw(st.integers(0, 3))}"
        previous = st.lists(st.sampled_from(every), max_size=4) if every else st.just([])
        members[f"m{i}"] = member(process, _pack(draw(previous)), _pack(draw(previous)))
    return members


def _process_tasks(
    result: GroupAssignment, members: dict[str, AssignmentMemberSpec]
) -> Counter[tuple[str, TaskId]]:
    held: Counter[tuple[str, TaskId]] = Counter()
    for m, a in result.members.items():
        for task in flat(a.active) | flat(a.standby):
            held[(members[m].process_id, task)] += 1
    return held


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_task_active_once_and_standbys_well_placed(data: st.DataObject) -> None:
    topology = data.draw(topologies())
    members = data.draw(groups(topology))
    replicas = data.draw(st.integers(0, 3))
    result = assign(GroupSpec(members, replicas), topology)
    assert set(result.members) == set(members)
    every = sorted((s, p) for s, n in topology.tasks.items() for p in range(n))
    assert sorted(t for a in result.members.values() for t in flat(a.active)) == every
    # no process holds a task twice (active + standby, or two standbys)
    assert all(n == 1 for n in _process_tasks(result, members).values())
    processes = len({m.process_id for m in members.values()})
    standbys = Counter(t for a in result.members.values() for t in flat(a.standby))
    for sub, p in every:
        want = min(replicas, processes - 1) if sub in topology.stateful else 0
        assert standbys[(sub, p)] == want, (sub, p)
    assert not any(a.warmup for a in result.members.values())


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_equal_input_gives_equal_output(data: st.DataObject) -> None:
    topology = data.draw(topologies())
    members = data.draw(groups(topology))
    replicas = data.draw(st.integers(0, 2))
    shuffled = dict(data.draw(st.permutations(list(members.items()))))
    first = assign(GroupSpec(members, replicas), topology)
    assert assign(GroupSpec(shuffled, replicas), topology) == first
    assert assign(GroupSpec(members, replicas), topology) == first


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_balance_within_one_per_process_when_members_are_equal(data: st.DataObject) -> None:
    topology = data.draw(topologies())
    members = data.draw(groups(topology, one_member_per_process=True))
    result = assign(GroupSpec(members, 0), topology)
    counts = [len(flat(a.active)) for a in result.members.values()]
    assert max(counts) - min(counts) <= 1, counts
