"""Static members of streams groups, as KAFKA-20169 designs them for Kafka 4.4 (Kafka 4.3.1
refuses InstanceId with INVALID_REQUEST): a leave with epoch -2 keeps the member and its tasks
until its session times out; the same instance id rejoining under a new member id takes them
over without a new group epoch, so the other members do not reconcile."""

from __future__ import annotations

from streamrt.errors import ErrorCode
from tests.broker.streams_group.coordinator_harness import (
    CHANGELOG,
    REPARTITION,
    Harness,
    actives,
    count_topology,
    tasks,
)


def _two_static_members(h: Harness) -> dict[str, set[int]]:
    h.join("a1", instance_id="A", process="pa")
    h.join("b1", instance_id="B", process="pb")
    held = h.settle("a1", "b1")
    mine = {m: actives(t) for m, t in held.items()}
    assert len(mine["a1"]) == len(mine["b1"]) == 2
    return mine


def test_static_bounce_keeps_the_tasks_and_the_group_epoch() -> None:
    h = Harness()
    mine = _two_static_members(h)
    epoch = h.group.group_epoch
    left = h.beat("a1", -2, instance_id="A")
    assert left.error == ErrorCode.none and left.member_epoch == -2
    assert h.group.members["a1"].member_epoch == -2  # kept, with its tasks
    assert actives(h.group.members["a1"].assigned) == mine["a1"]
    back = h.join("a2", instance_id="A", process="pa")
    assert back.error == ErrorCode.none and actives(back.tasks) == mine["a1"]
    assert back.member_epoch == epoch == h.group.group_epoch  # no new epoch
    assert "a1" not in h.group.members and h.group.static_members["A"] == "a2"
    b = h.beat("b1", epoch, tasks({"0": mine["b1"]}), instance_id="B")
    assert b.member_epoch == epoch and b.tasks is None  # B is not touched


def test_a_static_member_that_does_not_come_back_expires_with_its_session() -> None:
    h = Harness(session_timeout_ms=10_000)
    mine = _two_static_members(h)
    h.beat("a1", -2, instance_id="A")
    h.advance(5_000)
    h.beat("b1", 2, tasks({"0": mine["b1"]}))
    assert "a1" in h.group.members
    h.advance(6_000)
    assert "a1" not in h.group.members
    held = h.settle("b1")
    assert actives(held["b1"]) == {0, 1, 2, 3}


def test_unreleased_instance_id_while_the_old_member_is_active() -> None:
    h = Harness()
    _two_static_members(h)
    answer = h.join("a2", instance_id="A", process="pa")
    assert answer.error == ErrorCode.unreleased_instance_id
    assert h.group.static_members["A"] == "a1" and "a2" not in h.group.members


def test_fenced_instance_id_for_the_replaced_member() -> None:
    h = Harness()
    mine = _two_static_members(h)
    h.beat("a1", -2, instance_id="A")
    h.join("a2", instance_id="A", process="pa")
    # the old incarnation (still running somewhere) is fenced, heartbeat or leave
    old = h.beat("a1", 2, tasks({"0": mine["a1"]}), instance_id="A")
    assert old.error == ErrorCode.fenced_instance_id
    assert h.beat("a1", -1, instance_id="A").error == ErrorCode.fenced_instance_id
    assert h.beat("x1", 2, tasks(), instance_id="X").error == ErrorCode.unknown_member_id


def test_a_static_member_leaving_for_good_frees_its_tasks() -> None:
    h = Harness()
    mine = _two_static_members(h)
    epoch = h.group.group_epoch
    h.beat("a1", -1, instance_id="A")
    assert "A" not in h.group.static_members and h.group.group_epoch == epoch + 1
    held = h.settle("b1")
    assert actives(held["b1"]) == {0, 1, 2, 3} and mine["b1"] < actives(held["b1"])


def test_a_bounced_stateful_member_keeps_its_standbys_too() -> None:
    h = Harness(topics={"in": 2, REPARTITION: 2, CHANGELOG: 2}, num_standby_replicas=1)
    h.join("a1", instance_id="A", process="pa", topology=count_topology())
    h.join("b1", instance_id="B", process="pb", topology=count_topology())
    held = h.settle("a1", "b1")
    epoch = h.group.group_epoch
    h.beat("a1", -2, instance_id="A")
    back = h.join("a2", instance_id="A", process="pa", topology=count_topology())
    assert back.tasks is not None and back.tasks.same(held["a1"])
    assert h.group.group_epoch == epoch
