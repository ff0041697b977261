"""Removing streams-group members by LeaveGroup (the admin's scale-in), on the pure state
machine. Kafka 4.3.1 has no way (its LeaveGroup answers UNKNOWN_MEMBER_ID for a streams
group); streamrt follows KAFKA-20169's static members and Kafka's consumer-group removal: by
instance id alone (even a member at epoch -2, whose tasks wait for it), FENCED_INSTANCE_ID for
a member id that is not the instance's, UNKNOWN_MEMBER_ID for what is not there; the removed
go together with one group epoch bump, and a survivor's next heartbeat takes their tasks."""

from __future__ import annotations

from streamrt.broker.streams_group.persist import image, records_between
from streamrt.errors import ErrorCode
from tests.broker.streams_group.coordinator_harness import GROUP, Harness, actives, tasks
from tests.broker.streams_group.test_persistence import _replayed, _view

NONE, UNKNOWN, FENCED = (
    ErrorCode.none,
    ErrorCode.unknown_member_id,
    ErrorCode.fenced_instance_id,
)


def _three_static_members(h: Harness) -> dict[str, set[int]]:
    for m, i in (("a1", "A"), ("b1", "B"), ("c1", "C")):
        h.join(m, instance_id=i, process=f"p{i}")
    held = h.settle("a1", "b1", "c1")
    mine = {m: actives(t) for m, t in held.items()}
    assert sorted(len(p) for p in mine.values()) == [2, 2, 2]
    return mine


def test_static_members_gone_for_now_are_removed_by_instance_id_in_one_epoch() -> None:
    h = Harness(topics={"in": 6}, session_timeout_ms=60_000)
    mine = _three_static_members(h)
    h.beat("a1", -2, instance_id="A")  # stopped: its tasks wait for it
    h.beat("c1", -2, instance_id="C")
    epoch = h.group.group_epoch
    log = list(records_between(GROUP, None, image(h.group)))  # the group so far
    codes, records = h.coordinator.remove_members(
        GROUP, [("", "A"), ("", "C"), ("", "X"), ("b9", "B"), ("", "A")]
    )
    assert codes == [NONE, NONE, UNKNOWN, FENCED, NONE]
    assert h.group.group_epoch == epoch + 1  # once for the batch
    assert set(h.group.members) == {"b1"} and h.group.static_members == {"B": "b1"}
    assert _view(_replayed([*log, *records]).groups[GROUP]) == _view(h.group)  # persisted
    b = h.beat("b1", h.group.members["b1"].member_epoch, tasks({"0": mine["b1"]}))
    assert b.error == NONE and actives(b.tasks) == set(range(6))  # at once, not at expiry
    assert not h.timer.is_scheduled(f"streams-session-{GROUP}-a1")  # timers went with them
    assert h.timer.is_scheduled(f"streams-session-{GROUP}-b1")


def test_by_member_id_and_instance_id_and_dynamic_members() -> None:
    h = Harness(topics={"in": 6})
    h.join("a1", instance_id="A", process="pa")
    h.join("d1", process="pd")
    h.settle("a1", "d1")
    epoch = h.group.group_epoch
    codes, _ = h.coordinator.remove_members(GROUP, [("a1", "A"), ("d1", None), ("d9", None)])
    assert codes == [NONE, NONE, UNKNOWN]
    assert h.group.members == {} and h.group.group_epoch == epoch + 1


def test_nothing_found_changes_nothing() -> None:
    h = Harness(topics={"in": 6})
    _three_static_members(h)
    epoch = h.group.group_epoch
    codes, records = h.coordinator.remove_members(GROUP, [("", "X"), ("a9", "A"), ("z", None)])
    assert codes == [UNKNOWN, FENCED, UNKNOWN] and records == ()
    assert h.group.group_epoch == epoch and len(h.group.members) == 3
