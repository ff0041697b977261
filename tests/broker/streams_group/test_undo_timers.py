"""A step that is undone (a refused heartbeat, a removal or heartbeat whose records could not
be appended) puts its members back with their timers: a member the step replaced or fenced
must still expire when its session ends, or its tasks wait for it forever (review items 1, 2).
On the pure state machine with the manual clock and timer."""

from __future__ import annotations

from streamrt.errors import ErrorCode
from tests.broker.consumer_group.harness import GROUP as CGROUP
from tests.broker.consumer_group.harness import Harness as ConsumerHarness
from tests.broker.streams_group.coordinator_harness import (
    GROUP,
    Harness,
    actives,
    count_topology,
    tasks,
)

SESSION = 10_000


def _session(kind: str, group: str, member_id: str) -> str:
    return f"{kind}-session-{group}-{member_id}"


def _two_static_members(h: Harness) -> dict[str, set[int]]:
    h.join("a1", instance_id="A", process="pa")
    h.join("b1", instance_id="B", process="pb")
    return {m: actives(t) for m, t in h.settle("a1", "b1").items()}


def test_a_refused_static_rejoin_leaves_the_stopped_member_to_expire() -> None:
    """A rolling deploy of a changed topology under the same instance id: the heir is
    refused (topology updates are not supported), the stopped member at -2 keeps its session
    timer and its deadline, and expires with it."""
    h = Harness(session_timeout_ms=SESSION)
    mine = _two_static_members(h)
    h.beat("a1", -2, instance_id="A")
    deadline = h.timer.deadline(_session("streams", GROUP, "a1"))
    refused = h.join("a2", instance_id="A", process="pa", topology=count_topology())
    assert refused.error == ErrorCode.invalid_request
    assert h.group.members["a1"].member_epoch == -2 and "a2" not in h.group.members
    assert h.timer.deadline(_session("streams", GROUP, "a1")) == deadline  # not lengthened
    h.advance(SESSION // 2)
    h.beat("b1", h.group.members["b1"].member_epoch, tasks({"0": mine["b1"]}))
    h.advance(SESSION // 2 + 1)
    assert "a1" not in h.group.members
    assert actives(h.settle("b1")["b1"]) == {0, 1, 2, 3}  # its tasks are not stuck


def test_a_refused_dynamic_rejoin_keeps_the_member_expiring() -> None:
    """A dynamic member rejoining at epoch 0 is fenced first; when the rejoin is refused the
    member is back as it was, and its session still ends."""
    h = Harness(session_timeout_ms=SESSION)
    h.join("d1", process="pd")
    h.settle("d1")
    refused = h.join("d1", process="pd", topology=count_topology())
    assert refused.error == ErrorCode.invalid_request
    assert h.group.members["d1"].member_epoch > 0
    assert h.timer.is_scheduled(_session("streams", GROUP, "d1"))
    h.advance(SESSION + 1)
    assert "d1" not in h.group.members


def test_a_streams_removal_undone_gives_the_members_their_timers_back() -> None:
    """LeaveGroup's removal whose records could not be appended is undone by ``restore``:
    the members are back, with session timers, so they still expire."""
    h = Harness(session_timeout_ms=SESSION)
    _two_static_members(h)
    h.beat("a1", -2, instance_id="A")
    before = h.coordinator.snapshot(GROUP)
    codes, _ = h.coordinator.remove_members(GROUP, [("", "A"), ("b1", "B")])
    assert codes == [ErrorCode.none, ErrorCode.none] and not h.group.members
    h.coordinator.restore(GROUP, before)
    assert set(h.group.members) == {"a1", "b1"}
    for m in ("a1", "b1"):
        assert h.timer.is_scheduled(_session("streams", GROUP, m))
    h.advance(SESSION + 1)
    assert not h.group.members


def test_a_consumer_removal_undone_gives_the_members_their_timers_back() -> None:
    h = ConsumerHarness(session_timeout_ms=SESSION)
    h.join("a1", instance_id="A")
    h.join("b1")
    before = h.coordinator.snapshot(CGROUP)
    codes, _ = h.coordinator.remove_members(CGROUP, [("", "A"), ("b1", None)])
    assert codes == [ErrorCode.none, ErrorCode.none] and not h.group.members
    h.coordinator.restore(CGROUP, before)
    assert set(h.group.members) == {"a1", "b1"}
    for m in ("a1", "b1"):
        assert h.timer.is_scheduled(_session("consumer", CGROUP, m))
    h.advance(SESSION + 1)
    assert not h.group.members


def test_an_undone_streams_step_keeps_what_lives_only_in_memory() -> None:
    """``restore`` puts the whole group back: the shutdown request, the endpoint-information
    epoch, the tasks per subtopology and the assignment counter are not in the records, and
    a group rebuilt from its records alone lost them (review item 9)."""
    h = Harness(session_timeout_ms=SESSION)
    h.join("a1", process="pa", endpoint=("host-a", 8080))
    h.join("b1", process="pb")
    h.settle("a1", "b1")
    h.beat("b1", h.group.members["b1"].member_epoch, shutdown=True)
    group = h.group
    kept = (
        group.shutdown_requested_by,
        group.endpoint_information_epoch,
        dict(group.tasks_per_subtopology),
        group.assignments_computed,
    )
    assert kept[0] == "b1" and kept[1] > 0 and kept[2] == {"0": 4} and kept[3] > 0
    before = h.coordinator.snapshot(GROUP)
    h.coordinator.remove_members(GROUP, [("a1", None)])
    h.coordinator.restore(GROUP, before)
    group = h.group
    assert set(group.members) == {"a1", "b1"}
    assert (
        group.shutdown_requested_by,
        group.endpoint_information_epoch,
        dict(group.tasks_per_subtopology),
        group.assignments_computed,
    ) == kept
