"""Static members of consumer groups (KIP-848 with KIP-345's instance ids): a leave with epoch
-2 keeps member and assignment; the same instance id rejoining takes it over under its new
member id without a new group epoch, so the other members do not reconcile."""

from __future__ import annotations

from streamrt.errors import ErrorCode
from tests.broker.consumer_group.harness import Harness, parts


def _two_static_members(h: Harness) -> None:
    h.join("a1", instance_id="A")
    h.join("b1", instance_id="B")
    h.beat("a1", 1, {"t": set(range(6))}, instance_id="A")
    h.beat("a1", 1, {"t": {0, 1, 2}}, instance_id="A")
    h.beat("b1", 2, {}, instance_id="B")
    assert h.group.members["b1"].assigned == {"t": frozenset({3, 4, 5})}


def test_static_bounce_keeps_the_assignment_and_the_group_epoch() -> None:
    h = Harness()
    _two_static_members(h)
    epoch = h.group.group_epoch
    left = h.beat("a1", -2, instance_id="A")
    assert left.error == ErrorCode.none and left.member_epoch == -2
    assert h.group.members["a1"].member_epoch == -2  # kept, with its partitions
    assert h.group.group_epoch == epoch
    back = h.join("a2", instance_id="A")
    assert back.error == ErrorCode.none and parts(back) == {0, 1, 2}
    assert back.member_epoch == epoch
    assert "a1" not in h.group.members and h.group.static_members["A"] == "a2"
    assert h.group.group_epoch == epoch  # no new epoch: B is not touched
    b = h.beat("b1", epoch, {"t": {3, 4, 5}}, instance_id="B")
    assert b.member_epoch == epoch and b.assignment is None


def test_a_static_member_that_does_not_come_back_expires_with_its_session() -> None:
    h = Harness(session_timeout_ms=10_000)
    _two_static_members(h)
    h.beat("a1", -2, instance_id="A")
    h.advance(5_000)
    h.beat("b1", 2, {"t": {3, 4, 5}}, instance_id="B")
    assert "a1" in h.group.members
    h.advance(6_000)
    assert "a1" not in h.group.members
    assert parts(h.beat("b1", 2, {"t": {3, 4, 5}}, instance_id="B")) == set(range(6))


def test_unreleased_instance_id_while_the_old_member_is_active() -> None:
    h = Harness()
    _two_static_members(h)
    answer = h.join("a2", instance_id="A")
    assert answer.error == ErrorCode.unreleased_instance_id
    assert h.group.static_members["A"] == "a1"


def test_fenced_instance_id_for_the_replaced_member() -> None:
    h = Harness()
    _two_static_members(h)
    h.beat("a1", -2, instance_id="A")
    h.join("a2", instance_id="A")
    # the old incarnation (still running somewhere) is fenced, heartbeat or leave
    assert h.beat("a1", 2, {}, instance_id="A").error == ErrorCode.fenced_instance_id
    assert h.beat("a1", -1, instance_id="A").error == ErrorCode.fenced_instance_id
    assert h.beat("x1", 2, {}, instance_id="X").error == ErrorCode.unknown_member_id


def test_static_member_leaving_for_good_frees_its_partitions() -> None:
    h = Harness()
    _two_static_members(h)
    h.beat("a1", -1, instance_id="A")
    assert "A" not in h.group.static_members and h.group.group_epoch == 3
    assert parts(h.beat("b1", 2, {"t": {3, 4, 5}}, instance_id="B")) == set(range(6))
