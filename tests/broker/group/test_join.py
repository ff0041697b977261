"""JoinGroup stories: new members, MEMBER_ID_REQUIRED, static replacement, leader rejoin, delay."""

from __future__ import annotations

from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode
from tests.broker.group.context import TEST_CONFIG, CoordinatorTestContext


def test_dynamic_member_v4_plus_gets_member_id_required(context: CoordinatorTestContext) -> None:
    first = context.join(version=4)
    assert first.error is ErrorCode.member_id_required
    assert first.response.member_id.startswith("client-")
    assert context.coordinator.groups["g"].state is GroupState.EMPTY
    second = context.join(member_id=first.response.member_id, version=4)
    assert not second.done
    context.sleep(3000)
    assert second.error is ErrorCode.none
    assert second.response.leader == first.response.member_id


def test_dynamic_member_v3_joins_at_once_without_member_id_required(
    context: CoordinatorTestContext,
) -> None:
    pending = context.join(version=3)
    assert not pending.done
    context.sleep(3000)
    assert pending.error is ErrorCode.none
    assert pending.response.generation_id == 1


def test_static_member_never_gets_member_id_required(context: CoordinatorTestContext) -> None:
    pending = context.join(instance_id="i1", version=5)
    assert not pending.done
    context.sleep(3000)
    assert pending.error is ErrorCode.none
    assert pending.response.member_id.startswith("i1-")


def test_session_timeout_bounds_and_group_id_checks(context: CoordinatorTestContext) -> None:
    assert context.join(session_ms=5).error is ErrorCode.invalid_session_timeout
    assert context.join(session_ms=600_001).error is ErrorCode.invalid_session_timeout
    assert context.join(group_id="").error is ErrorCode.invalid_group_id
    unknown = context.join(group_id="nope", member_id="m-1")
    assert unknown.error is ErrorCode.unknown_member_id
    assert unknown.response.member_id == "m-1"
    assert "nope" not in context.coordinator.groups


def test_inconsistent_protocol_rejected(context: CoordinatorTestContext) -> None:
    assert context.join(protocol_type="").error is ErrorCode.inconsistent_group_protocol
    context.join_stable_group(instances=("i1",))
    other = context.join(instance_id="i2", protocols=(("roundrobin", b"x"),))
    assert other.error is ErrorCode.inconsistent_group_protocol
    wrong_type = context.join(instance_id="i3", protocol_type="connect")
    assert wrong_type.error is ErrorCode.inconsistent_group_protocol


def test_static_rejoin_in_stable_v9_follower_keeps_generation_without_rebalance(
    context: CoordinatorTestContext,
) -> None:
    ids = context.join_stable_group()
    group = context.coordinator.groups["g"]
    follower = "i2" if group.leader_id == ids["i1"] else "i1"
    log_before = len(context.log)
    rejoin = context.join(instance_id=follower, version=9)
    assert rejoin.error is ErrorCode.none
    assert rejoin.response.generation_id == 1
    assert rejoin.response.member_id != ids[follower]
    assert rejoin.response.skip_assignment is False
    assert rejoin.response.members == ()
    assert group.state is GroupState.STABLE
    assert len(context.log) == log_before + 1  # the new member id is persisted
    new_id = rejoin.response.member_id
    sync = context.sync("g", new_id, 1, follower)
    assert sync.response.assignment == f"assign-{ids[follower]}".encode()
    # The old member id is fenced on every API.
    assert context.heartbeat("g", ids[follower], 1, follower) is ErrorCode.fenced_instance_id
    assert context.sync("g", ids[follower], 1, follower).error is ErrorCode.fenced_instance_id
    fenced = context.commit("g", ids[follower], 1, follower)
    assert set(fenced.values()) == {ErrorCode.fenced_instance_id}
    leave = context.leave("g", [(ids[follower], follower)])
    assert leave.members[0].error_code == ErrorCode.fenced_instance_id
    old_join = context.join(member_id=ids[follower], instance_id=follower)
    assert old_join.error is ErrorCode.fenced_instance_id


def test_static_leader_rejoin_in_stable_v9_gets_skip_assignment(
    context: CoordinatorTestContext,
) -> None:
    ids = context.join_stable_group()
    group = context.coordinator.groups["g"]
    leader_instance = next(i for i, m in ids.items() if m == group.leader_id)
    rejoin = context.join(instance_id=leader_instance, version=9)
    new_id = rejoin.response.member_id
    assert rejoin.error is ErrorCode.none
    assert rejoin.response.skip_assignment is True
    assert rejoin.response.leader == new_id
    assert {m.member_id for m in rejoin.response.members} == set(group.members)
    assert group.state is GroupState.STABLE and group.generation_id == 1


def test_static_leader_rejoin_in_stable_v5_gets_old_leader_id(
    context: CoordinatorTestContext,
) -> None:
    ids = context.join_stable_group()
    group = context.coordinator.groups["g"]
    old_leader = group.leader_id
    leader_instance = next(i for i, m in ids.items() if m == old_leader)
    rejoin = context.join(instance_id=leader_instance, version=5)
    assert rejoin.error is ErrorCode.none
    assert rejoin.response.leader == old_leader
    assert rejoin.response.member_id != old_leader
    assert rejoin.response.members == ()
    assert group.leader_id == rejoin.response.member_id
    assert group.state is GroupState.STABLE


def test_kafka_streams_restart_rejoins_with_new_user_data_without_rebalance(
    context: CoordinatorTestContext,
) -> None:
    """What a restarted Kafka Streams 4.3.1 instance sends (seen on the wire): each stream
    thread's consumer rejoins with member id "" and its instance id, JoinGroup v9, protocol
    "stream" whose user data changed (it carries task offset sums). Within the session timeout
    that is a static replacement in Stable, as on Apache Kafka: no new generation; the leader
    gets skip_assignment with the members' new metadata; both get their assignments back."""
    before = (("stream", b"offset-sums-1"),)
    after = (("stream", b"offset-sums-2"),)
    instances = ("instance-1-1", "instance-1-2", "instance-2-1")
    ids = context.join_stable_group(instances=instances, protocols=before)
    group = context.coordinator.groups["g"]
    assert group.leader_id == ids["instance-1-1"]
    rebalances = context.coordinator.rebalances_total("g")
    context.sleep(9_000)  # instance-1 is down; nobody heartbeats, nobody expires yet
    leader = context.join(instance_id="instance-1-1", protocols=after)
    follower = context.join(instance_id="instance-1-2", protocols=after)
    assert (leader.error, follower.error) == (ErrorCode.none, ErrorCode.none)
    assert leader.response.generation_id == follower.response.generation_id == 1
    assert leader.response.skip_assignment is True
    assert leader.response.leader == leader.response.member_id
    # The member list as it is at the leader's rejoin: instance-1-2 still under its old id.
    members = {m.member_id: m.metadata for m in leader.response.members}
    assert members == {
        leader.response.member_id: b"offset-sums-2",
        ids["instance-1-2"]: b"offset-sums-1",
        ids["instance-2-1"]: b"offset-sums-1",
    }
    assert follower.response.skip_assignment is False and follower.response.members == ()
    assert group.state is GroupState.STABLE
    assert context.coordinator.rebalances_total("g") == rebalances
    for instance, pending in (("instance-1-1", leader), ("instance-1-2", follower)):
        sync = context.sync("g", pending.response.member_id, 1, instance, protocol_name="stream")
        assert sync.response.assignment == f"assign-{ids[instance]}".encode()


def test_static_rejoin_with_protocol_change_rebalances(context: CoordinatorTestContext) -> None:
    context.join_stable_group(instances=("i1",))
    rejoin = context.join(instance_id="i1", protocols=(("roundrobin", b"r"), ("range", b"x")))
    group = context.coordinator.groups["g"]
    # The only member is awaiting join again, so the new generation completes at once.
    assert rejoin.error is ErrorCode.none
    assert rejoin.response.generation_id == 2
    assert rejoin.response.protocol_name == "roundrobin"
    assert group.state is GroupState.COMPLETING_REBALANCE


def test_static_rejoin_persistence_failure_reverts(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group()
    group = context.coordinator.groups["g"]
    context.fail_next_append = ErrorCode.not_leader_or_follower
    rejoin = context.join(instance_id="i2")
    assert rejoin.error is ErrorCode.not_coordinator
    assert rejoin.response.member_id == ""
    assert group.static_members["i2"] == ids["i2"]
    assert context.heartbeat("g", ids["i2"], 1, "i2") is ErrorCode.none


def test_static_replacement_fences_parked_join(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(instances=("i1", "i2", "i3"), session_ms=60_000)
    group = context.coordinator.groups["g"]
    leader_instance = next(i for i, m in ids.items() if m == group.leader_id)
    follower, waiting = (i for i in ids if i != leader_instance)
    leader_join = context.join(member_id=ids[leader_instance], instance_id=leader_instance)
    assert group.state is GroupState.PREPARING_REBALANCE
    parked = context.join(member_id=ids[follower], instance_id=follower)
    assert not parked.done and not leader_join.done
    duplicate = context.join(instance_id=follower)
    assert parked.error is ErrorCode.fenced_instance_id
    assert parked.response.member_id == ids[follower]
    assert parked.response.generation_id == -1
    assert not duplicate.done and not leader_join.done
    context.join(member_id=ids[waiting], instance_id=waiting)  # the last one completes it
    assert duplicate.error is ErrorCode.none and leader_join.error is ErrorCode.none
    assert duplicate.response.generation_id == 2


def test_static_replacement_fences_parked_sync(context: CoordinatorTestContext) -> None:
    first = context.join(instance_id="i1")
    second = context.join(instance_id="i2")
    context.sleep(6000)
    group = context.coordinator.groups["g"]
    assert group.state is GroupState.COMPLETING_REBALANCE
    follower = second if first.response.leader == first.response.member_id else first
    follower_instance = "i2" if follower is second else "i1"
    parked_sync = context.sync("g", follower.response.member_id, 1, follower_instance)
    assert not parked_sync.done
    replacement = context.join(instance_id=follower_instance)
    assert parked_sync.error is ErrorCode.fenced_instance_id
    # Replacement in CompletingRebalance always rebalances.
    assert group.state is GroupState.PREPARING_REBALANCE
    assert not replacement.done


def test_leader_rejoin_with_same_metadata_rebalances_in_stable(
    context: CoordinatorTestContext,
) -> None:
    ids = context.join_stable_group()
    group = context.coordinator.groups["g"]
    follower_instance = next(i for i, m in ids.items() if m != group.leader_id)
    leader_instance = next(i for i, m in ids.items() if m == group.leader_id)
    follower = context.join(member_id=ids[follower_instance], instance_id=follower_instance)
    assert follower.error is ErrorCode.none and follower.response.generation_id == 1
    assert group.state is GroupState.STABLE
    leader = context.join(member_id=ids[leader_instance], instance_id=leader_instance)
    assert not leader.done
    assert group.state is GroupState.PREPARING_REBALANCE


def test_leader_not_rejoining_is_replaced_by_a_rejoined_member(
    context: CoordinatorTestContext,
) -> None:
    ids = context.join_stable_group(instances=(None, "i2"))
    group = context.coordinator.groups["g"]
    assert group.leader_id == ids[None]
    rejoin = context.join(member_id=ids["i2"], instance_id="i2", protocols=(("range", b"changed"),))
    context.sleep(10_000)
    assert rejoin.error is ErrorCode.none
    assert rejoin.response.leader == ids["i2"]
    assert ids[None] not in group.members  # dynamic non-rejoiner removed


def test_rebalance_timeout_keeps_static_members_that_did_not_rejoin(
    context: CoordinatorTestContext,
) -> None:
    ids = context.join_stable_group(instances=("i1", "i2", None), session_ms=60_000)
    group = context.coordinator.groups["g"]
    rejoin = context.join(
        member_id=ids["i1"],
        instance_id="i1",
        protocols=(("range", b"changed"),),
        session_ms=60_000,
    )
    context.sleep(10_000)
    assert rejoin.error is ErrorCode.none
    assert ids["i2"] in group.members
    assert ids[None] not in group.members
    assert rejoin.response.leader == ids["i1"]
    listed = {m.member_id: m.group_instance_id for m in rejoin.response.members}
    assert listed == {ids["i1"]: "i1", ids["i2"]: "i2"}


def test_nobody_rejoined_extends_the_join_phase(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(instances=("i1", "i2", "i3"), session_ms=60_000)
    group = context.coordinator.groups["g"]
    leave = context.leave("g", [("", "i3")])
    assert leave.members[0].error_code == ErrorCode.none
    assert group.state is GroupState.PREPARING_REBALANCE
    context.sleep(10_000)  # join timer fires, nobody rejoined: the phase is extended
    assert group.state is GroupState.PREPARING_REBALANCE
    assert group.generation_id == 1
    rejoin = context.join(member_id=ids["i2"], instance_id="i2", session_ms=60_000)
    context.sleep(9_999)
    assert not rejoin.done
    context.sleep(1)
    assert rejoin.error is ErrorCode.none and rejoin.response.generation_id == 2
    assert rejoin.response.leader == ids["i2"]
    assert set(group.members) == {ids["i1"], ids["i2"]}


def test_session_expiry_removes_static_member(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(session_ms=10_000)
    group = context.coordinator.groups["g"]
    context.sleep(9_999)
    assert context.heartbeat("g", ids["i1"], 1, "i1") is ErrorCode.none
    assert ids["i2"] in group.members
    context.sleep(1)
    assert ids["i2"] not in group.members
    assert "i2" not in group.static_members
    assert group.state is GroupState.PREPARING_REBALANCE
    assert context.heartbeat("g", ids["i1"], 1, "i1") is ErrorCode.rebalance_in_progress


def test_initial_delay_single_member(context: CoordinatorTestContext) -> None:
    pending = context.join(instance_id="i1")
    context.sleep(2999)
    assert not pending.done
    context.sleep(1)
    assert pending.done


def test_initial_delay_two_members_extend_by_one_window(context: CoordinatorTestContext) -> None:
    first = context.join(instance_id="i1", rebalance_ms=10_000)
    context.sleep(1000)
    second = context.join(instance_id="i2", rebalance_ms=10_000)
    context.sleep(2000)  # t=3000: a new member arrived, the window is extended
    assert not first.done and not second.done
    context.sleep(2999)
    assert not first.done
    context.sleep(1)  # t=6000
    assert first.done and second.done


def test_initial_delay_is_capped_by_rebalance_timeout(context: CoordinatorTestContext) -> None:
    first = context.join(instance_id="i1", rebalance_ms=5000)
    second = context.join(instance_id="i2", rebalance_ms=5000)
    context.sleep(4999)
    assert not first.done
    context.sleep(1)  # t=5000: second window was min(3000, 2000)
    assert first.done and second.done


def test_group_max_size_rejects_new_members() -> None:
    ctx = CoordinatorTestContext(GroupConfig(**{**_cfg(), "max_size": 2}))
    ids = ctx.join_stable_group()
    third = ctx.join(instance_id="i3")
    assert third.error is ErrorCode.group_max_size_reached
    assert third.response.member_id == ""
    # Quirk: a static replacement into a full Stable group is rejected too.
    replaced = ctx.join(instance_id="i1")
    assert replaced.error is ErrorCode.group_max_size_reached
    assert ctx.coordinator.groups["g"].static_members["i1"] == ids["i1"]


def test_group_max_size_kicks_out_last_rejoiner_in_preparing() -> None:
    ctx = CoordinatorTestContext(GroupConfig(**{**_cfg(), "max_size": 1}))
    first = ctx.join(instance_id="i1")
    second = ctx.join(instance_id="i2")  # group PreparingRebalance with one awaiting member
    assert second.error is ErrorCode.group_max_size_reached
    ctx.sleep(3000)
    assert first.error is ErrorCode.none
    assert list(ctx.coordinator.groups["g"].static_members) == ["i1"]


def test_pending_member_expires_after_session_timeout(context: CoordinatorTestContext) -> None:
    first = context.join(session_ms=1000)
    context.sleep(1000)
    late = context.join(member_id=first.response.member_id)
    assert late.error is ErrorCode.unknown_member_id


def test_superseded_join_is_never_answered(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group()
    group = context.coordinator.groups["g"]
    leader_instance = next(i for i, m in ids.items() if m == group.leader_id)
    first = context.join(member_id=ids[leader_instance], instance_id=leader_instance)
    assert not first.done and not first.abandoned
    second = context.join(member_id=ids[leader_instance], instance_id=leader_instance)
    assert first.abandoned  # so the network layer can let its connection go
    context.sleep(10_000)
    assert second.done and not first.done


def _cfg() -> dict[str, int]:
    return {
        "min_session_timeout_ms": TEST_CONFIG.min_session_timeout_ms,
        "max_session_timeout_ms": TEST_CONFIG.max_session_timeout_ms,
        "initial_rebalance_delay_ms": TEST_CONFIG.initial_rebalance_delay_ms,
    }
