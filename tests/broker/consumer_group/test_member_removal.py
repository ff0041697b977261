"""Removing consumer-group members by LeaveGroup (Admin's ``removeMembersFromConsumerGroup``),
on the pure state machine, as Kafka 4.3.1's ``classicGroupLeaveToConsumerGroup``: by instance
id alone (even a static member at epoch -2, whose partitions wait for it), by member id,
FENCED_INSTANCE_ID when the member id is not the instance's, UNKNOWN_MEMBER_ID for what is not
there; the removed go together with one group epoch bump, written to the log, and the
survivor's next heartbeat takes their partitions."""

from __future__ import annotations

from streamrt.errors import ErrorCode
from tests.broker.consumer_group.harness import GROUP, Harness, parts
from tests.broker.consumer_group.test_persistence import Persisted, _state
from tests.broker.consumer_group.test_static_members import _two_static_members

NONE, UNKNOWN, FENCED = (
    ErrorCode.none,
    ErrorCode.unknown_member_id,
    ErrorCode.fenced_instance_id,
)


def test_a_static_member_gone_for_now_is_removed_by_instance_id() -> None:
    h = Persisted(session_timeout_ms=60_000)
    _two_static_members(h)
    h.beat("a1", -2, instance_id="A")  # stopped: its partitions wait for it
    epoch = h.group.group_epoch
    codes, records = h.coordinator.remove_members(
        GROUP, [("", "A"), ("", "X"), ("b9", "B"), ("", "A")]
    )
    assert codes == [NONE, UNKNOWN, FENCED, NONE]
    assert h.group.group_epoch == epoch + 1  # once for the batch
    assert set(h.group.members) == {"b1"} and h.group.static_members == {"B": "b1"}
    assert not h.timer.is_scheduled(f"consumer-session-{GROUP}-a1")
    h.log.extend(records)
    assert _state(h.restarted()) == _state(h.coordinator)  # persisted
    b = h.beat("b1", 2, {"t": {3, 4, 5}}, instance_id="B")
    assert parts(b) == set(range(6)) and b.member_epoch == epoch + 1  # now, not at expiry


def test_by_member_id_and_instance_id_and_dynamic_members() -> None:
    h = Harness()
    h.join("a1", instance_id="A")
    h.join("d1")
    epoch = h.group.group_epoch
    codes, _ = h.coordinator.remove_members(GROUP, [("a1", "A"), ("d1", None), ("d9", None)])
    assert codes == [NONE, NONE, UNKNOWN]
    assert h.group.members == {} and h.group.group_epoch == epoch + 1


def test_nothing_found_changes_nothing() -> None:
    h = Harness()
    _two_static_members(h)
    epoch = h.group.group_epoch
    codes, records = h.coordinator.remove_members(GROUP, [("", "X"), ("a9", "A"), ("z", None)])
    assert codes == [UNKNOWN, FENCED, UNKNOWN] and records == ()
    assert h.group.group_epoch == epoch and len(h.group.members) == 2
