"""SyncGroup, Heartbeat and LeaveGroup stories, and the state table."""

from __future__ import annotations

import pytest

from streamrt.broker.group.state import GroupState, IllegalStateTransition, check_transition
from streamrt.errors import ErrorCode
from tests.broker.group.context import CoordinatorTestContext


def test_transition_table_asserts() -> None:
    check_transition(GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
    check_transition(GroupState.STABLE, GroupState.DEAD)
    with pytest.raises(IllegalStateTransition):
        check_transition(GroupState.EMPTY, GroupState.STABLE)
    with pytest.raises(IllegalStateTransition):
        check_transition(GroupState.STABLE, GroupState.COMPLETING_REBALANCE)


def test_sync_errors(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group()
    assert context.sync("nope", "m", 1).error is ErrorCode.unknown_member_id
    assert context.sync("g", ids["i1"], 7, "i1").error is ErrorCode.illegal_generation
    assert context.sync("g", "other", 1, "i1").error is ErrorCode.fenced_instance_id
    assert context.sync("g", ids["i1"], 1, "zz").error is ErrorCode.unknown_member_id
    wrong = context.sync("g", ids["i1"], 1, "i1", protocol_name="roundrobin")
    assert wrong.error is ErrorCode.inconsistent_group_protocol
    missing = context.sync("g", ids["i1"], 1, "i1", protocol_type=None)
    assert missing.error is ErrorCode.inconsistent_group_protocol
    ok = context.sync("g", ids["i1"], 1, "i1", version=3, protocol_type=None)
    assert ok.error is ErrorCode.none


def test_parked_sync_gets_rebalance_in_progress_when_a_member_joins(
    context: CoordinatorTestContext,
) -> None:
    first = context.join(instance_id="i1")
    second = context.join(instance_id="i2")
    context.sleep(6000)
    follower = second if first.response.leader == first.response.member_id else first
    instance = "i2" if follower is second else "i1"
    parked = context.sync("g", follower.response.member_id, 1, instance)
    assert not parked.done
    context.join(instance_id="i3")
    assert parked.error is ErrorCode.rebalance_in_progress
    assert context.coordinator.groups["g"].state is GroupState.PREPARING_REBALANCE


def test_pending_sync_timeout_removes_static_members_that_never_synced(
    context: CoordinatorTestContext,
) -> None:
    first = context.join(instance_id="i1", session_ms=60_000)
    second = context.join(instance_id="i2", session_ms=60_000)
    context.sleep(6000)
    leader = first if first.response.leader == first.response.member_id else second
    leader_instance = "i1" if leader is first else "i2"
    follower_id = (second if leader is first else first).response.member_id
    sync = context.sync("g", leader.response.member_id, 1, leader_instance, {})
    assert sync.error is ErrorCode.none
    group = context.coordinator.groups["g"]
    assert group.state is GroupState.STABLE
    context.sleep(10_000)  # the sync timer (group rebalance timeout) fires
    assert follower_id not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE


def test_heartbeat_by_state(context: CoordinatorTestContext) -> None:
    assert context.heartbeat("nope", "m", 0) is ErrorCode.unknown_member_id
    assert context.heartbeat("", "m", 0) is ErrorCode.invalid_group_id
    pending = context.join(instance_id="i1")
    member_id = context.coordinator.groups["g"].static_members["i1"]
    assert context.heartbeat("g", member_id, 0, "i1") is ErrorCode.rebalance_in_progress
    context.sleep(3000)
    assert pending.done
    assert context.heartbeat("g", member_id, 1, "i1") is ErrorCode.none  # CompletingRebalance
    assert context.heartbeat("g", member_id, 0, "i1") is ErrorCode.illegal_generation
    assert context.heartbeat("g", "bad", 0, "i1") is ErrorCode.fenced_instance_id
    # Without the instance id, the static member's current member id is accepted.
    assert context.heartbeat("g", member_id, 1) is ErrorCode.none


def test_leave_group_batch_with_unknown_ids(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(instances=("i1", "i2", None))
    response = context.leave(
        "g",
        [("", "i1"), ("unknown", None), ("", None), (ids["i2"], "wrong"), (ids[None], None)],
    )
    assert response.error_code == ErrorCode.none
    got = [(m.member_id, m.group_instance_id, m.error_code) for m in response.members]
    assert got == [
        ("", "i1", ErrorCode.none),
        ("unknown", None, ErrorCode.unknown_member_id),
        ("", None, ErrorCode.unknown_member_id),
        (ids["i2"], "wrong", ErrorCode.unknown_member_id),
        (ids[None], None, ErrorCode.none),
    ]
    group = context.coordinator.groups["g"]
    assert set(group.members) == {ids["i2"]}
    assert group.state is GroupState.PREPARING_REBALANCE


def test_leave_group_unknown_group_and_old_versions(context: CoordinatorTestContext) -> None:
    response = context.leave("nope", [("m1", None), ("", "i1")])
    assert response.error_code == ErrorCode.none
    assert [m.error_code for m in response.members] == [ErrorCode.unknown_member_id] * 2
    assert context.leave("nope", [("m1", None)], version=1).error_code == (
        ErrorCode.unknown_member_id
    )
    ids = context.join_stable_group(instances=("i1",))
    assert context.leave("g", [(ids["i1"], None)], version=0).error_code == ErrorCode.none
    group = context.coordinator.groups["g"]
    assert group.state is GroupState.EMPTY and group.generation_id == 2


def test_leave_answers_parked_join_with_unknown_member(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(session_ms=60_000)
    group = context.coordinator.groups["g"]
    leader_instance = next(i for i, m in ids.items() if m == group.leader_id)
    parked = context.join(member_id=ids[leader_instance], instance_id=leader_instance)
    context.leave("g", [("", leader_instance)])
    assert parked.error is ErrorCode.unknown_member_id
    assert parked.response.member_id == ""
