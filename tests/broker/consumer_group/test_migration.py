"""Online migration between the classic and the consumer protocol in one group, as state
machines on a manual clock (``group.consumer.migration.policy``; Kafka's
``convertToConsumerGroup``/``convertToClassicGroup`` and the ``classicGroup*ToConsumerGroup``
steps): a consumer-protocol member upgrades a classic group whose members keep their ids,
static ids and partitions and keep working through JoinGroup/SyncGroup/Heartbeat; no partition
is held by two members on the way; the last consumer-protocol member leaving downgrades it.
"""

from __future__ import annotations

from streamrt.broker.consumer_group.embedded import decode_assignment
from streamrt.broker.consumer_group.member import ClassicMetadata, ConsumerMember
from streamrt.broker.consumer_group.records import decode_member_fields, member_metadata_record
from streamrt.broker.group.records import GroupMetadataKey, decode_key
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode
from tests.broker.consumer_group.mixed import (
    GROUP,
    TOPIC,
    Mixed,
    stable_classic_group,
    subscription,
)


def _no_partition_twice(ctx: Mixed) -> None:
    assert all(len(owners) == 1 for owners in ctx.held().values()), ctx.held()


def _assigned(ctx: Mixed, member_id: str) -> set[int]:
    return set(ctx.cgroup.members[member_id].assigned.get(TOPIC, frozenset()))


def test_a_consumer_member_upgrades_the_classic_group_and_its_members_keep_their_partitions() -> (
    None
):
    ctx = Mixed()
    (a, gen), (b, _) = stable_classic_group(ctx, None, "static-b")
    ctx.log.clear()
    answer = ctx.consumer_join("new")
    assert answer.error is ErrorCode.none
    assert GROUP not in ctx.coordinator.groups  # the classic group is gone ...
    group = ctx.cgroup  # ... into a consumer group at the classic generation, +1 for the join
    assert group.group_epoch == gen + 1
    assert _assigned(ctx, a) == {0, 2} and _assigned(ctx, b) == {1, 3}
    assert group.static_member("static-b").member_id == b  # type: ignore[union-attr]
    assert group.members[a].classic is not None and group.members["new"].classic is None
    assert answer.assignment == {}  # every partition is still held by a classic member
    _no_partition_twice(ctx)
    # the log: the classic group's tombstone, then the consumer group's records
    first = ctx.log[0]
    assert first.value is None and decode_key(first.key) == GroupMetadataKey(GROUP)


def test_classic_members_rejoin_and_hand_partitions_over_without_overlap() -> None:
    ctx = Mixed()
    (a, gen_a), (b, gen_b) = stable_classic_group(ctx, None, None)
    new = ctx.consumer_join("new")
    # the classic members learn of the new epoch from their heartbeats
    assert ctx.heartbeat(GROUP, a, gen_a) is ErrorCode.rebalance_in_progress
    assert ctx.heartbeat(GROUP, b, gen_b) is ErrorCode.rebalance_in_progress
    for member in (a, b):
        owned = _assigned(ctx, member)
        join = ctx.join(member_id=member, protocols=(("range", subscription(owned)),))
        assert join.error is ErrorCode.none
        assert join.response.leader == "" and join.response.protocol_name == "range"
        _no_partition_twice(ctx)
        sync = ctx.sync(GROUP, member, join.response.generation_id)
        assert sync.error is ErrorCode.none
        kept = set(decode_assignment(sync.response.assignment).get(TOPIC, frozenset()))
        assert kept == _assigned(ctx, member) and kept <= owned  # what it may keep now
        # revoked for real: it rejoins owning what it kept, and is at the group epoch
        ctx.join(member_id=member, protocols=(("range", subscription(kept)),))
    _no_partition_twice(ctx)
    answer = ctx.consumer_beat("new", new.member_epoch, set())
    assert answer.error is ErrorCode.none
    assert set(answer.assignment[TOPIC]) and not (  # type: ignore[index]
        set(answer.assignment[TOPIC]) & (_assigned(ctx, a) | _assigned(ctx, b))  # type: ignore[index]
    )
    assert set(ctx.held()) == {0, 1, 2, 3}
    _no_partition_twice(ctx)
    group = ctx.cgroup
    for member in (a, b):  # stable at the group epoch: plain heartbeats again
        epoch = group.members[member].member_epoch
        assert ctx.heartbeat(GROUP, member, epoch) is ErrorCode.none


def test_a_static_member_keeps_its_partitions_across_the_upgrade_and_a_restart() -> None:
    ctx = Mixed()
    (_, _), (b, gen_b) = stable_classic_group(ctx, None, "static-b")
    ctx.consumer_join("new")
    before = _assigned(ctx, b)
    assert before == {1, 3}
    # the static member restarts: a JoinGroup with its instance id and no member id
    join = ctx.join(instance_id="static-b", protocols=(("range", subscription()),))
    assert join.error is ErrorCode.none
    heir = join.response.member_id
    assert heir != b and b not in ctx.cgroup.members
    assert ctx.cgroup.static_member("static-b").member_id == heir  # type: ignore[union-attr]
    # it gives back what the new target takes from it, keeps the rest (nothing moved to others)
    assert _assigned(ctx, heir) <= before
    assert ctx.cgroup.target[heir] == ctx.cgroup.target.get(heir)
    _no_partition_twice(ctx)
    # the old member id is fenced
    assert ctx.heartbeat(GROUP, b, gen_b, "static-b") is ErrorCode.fenced_instance_id


def test_the_migration_policy_decides_whether_a_classic_group_is_upgraded() -> None:
    for policy in ("disabled", "downgrade"):
        ctx = Mixed(migration_policy=policy)
        stable_classic_group(ctx, None)
        answer = ctx.consumer_join("new")
        assert answer.error is ErrorCode.group_id_not_found
        assert "not a consumer group" in (answer.message or "")
        assert ctx.classic.is_in(GroupState.STABLE) and GROUP not in ctx.consumer.groups


def test_a_refused_join_leaves_the_group_classic() -> None:
    ctx = Mixed(max_size=2)
    (a, gen), (b, _) = stable_classic_group(ctx, None, None)
    answer = ctx.consumer_join("third")  # the group may be upgraded, but is then full
    assert answer.error is ErrorCode.group_max_size_reached
    assert ctx.classic.members.keys() == {a, b} and GROUP not in ctx.consumer.groups
    assert ctx.heartbeat(GROUP, a, gen) is ErrorCode.none


def test_a_static_member_switching_protocols_replaces_its_classic_incarnation() -> None:
    ctx = Mixed()
    (a, gen_a), (b, _) = stable_classic_group(ctx, "static-a", "static-b")
    # "static-a" restarts with the consumer protocol; its classic incarnation never left
    answer = ctx.consumer_join("a-consumer", instance_id="static-a")
    assert answer.error is ErrorCode.none
    assert answer.assignment == {TOPIC: frozenset({0, 2})}  # its partitions, at once
    group = ctx.cgroup
    assert a not in group.members and group.members["a-consumer"].classic is None
    assert _assigned(ctx, b) == {1, 3} and group.group_epoch == gen_a  # nobody else moves
    _no_partition_twice(ctx)
    assert ctx.heartbeat(GROUP, a, gen_a, "static-a") is ErrorCode.fenced_instance_id


def test_the_last_consumer_member_leaving_downgrades_the_group() -> None:
    ctx = Mixed()
    (a, _), (b, _) = stable_classic_group(ctx, None, "static-b")
    new = ctx.consumer_join("new")
    epoch = ctx.cgroup.group_epoch
    target_b = set(ctx.cgroup.target[b][TOPIC])
    assert target_b < {1, 3}  # "new" is to take one of b's partitions
    ctx.log.clear()
    leave = ctx.consumer_beat("new", -1, set())
    assert leave.error is ErrorCode.none
    assert new.member_id == "new" and GROUP not in ctx.consumer.groups
    classic = ctx.classic  # a classic group that rebalances: the members rejoin
    assert classic.members.keys() == {a, b}
    assert classic.static_members == {"static-b": b}
    assert classic.generation_id == epoch + 1
    assert classic.is_in(GroupState.PREPARING_REBALANCE)
    assert classic.protocol_name == "range" and classic.protocol_type == "consumer"
    # their assignments are their targets; the log has the consumer tombstones, then the group
    assert set(decode_assignment(classic.members[b].assignment)[TOPIC]) == target_b
    assert ctx.log[-1].value is not None and all(r.value is None for r in ctx.log[:-1])
    loaded = Mixed()  # what a restart would load: the classic group, its members and assignments
    loaded.coordinator.replay(ctx.log[-1])
    assert loaded.classic.members.keys() == {a, b} and loaded.classic.generation_id == epoch + 1
    assert loaded.classic.members[b].assignment == classic.members[b].assignment
    # the classic way again: heartbeat, rejoin, sync
    assert ctx.heartbeat(GROUP, a, classic.generation_id) is ErrorCode.rebalance_in_progress
    ja = ctx.join(member_id=a)
    jb = ctx.join(member_id=b, instance_id="static-b")
    assert ja.error is ErrorCode.none and jb.error is ErrorCode.none
    assert classic.is_in(GroupState.COMPLETING_REBALANCE)


def test_without_downgrade_in_the_policy_the_group_stays_a_consumer_group() -> None:
    ctx = Mixed(migration_policy="upgrade")
    (a, _), (b, _) = stable_classic_group(ctx, None, None)
    ctx.consumer_join("new")
    assert ctx.consumer_beat("new", -1, set()).error is ErrorCode.none
    assert GROUP not in ctx.coordinator.groups and ctx.cgroup.members.keys() == {a, b}


def test_a_classic_member_is_fenced_after_its_own_session_timeout() -> None:
    ctx = Mixed(session_timeout_ms=45_000)
    stable_classic_group(ctx, None, None)  # their session timeout: 10 s
    new = ctx.consumer_join("new")
    for _ in range(3):  # "new" heartbeats, the classic members are silent
        ctx.sleep(4_000)
        new = ctx.consumer_beat("new", new.member_epoch, set(new.assignment or {}))
    ctx.sleep(500)
    # both fenced at 10 s, not 45 s; only the consumer member is left
    assert ctx.cgroup.members.keys() == {"new"}


def test_a_classic_member_that_does_not_rejoin_in_its_rebalance_timeout_is_fenced() -> None:
    ctx = Mixed(session_timeout_ms=600_000)
    (a, gen_a), (b, gen_b) = stable_classic_group(ctx, None, None)
    ctx.consumer_join("new")
    assert ctx.heartbeat(GROUP, a, gen_a) is ErrorCode.rebalance_in_progress
    for _ in range(4):  # it keeps heartbeating but never rejoins (rebalance timeout 10 s)
        ctx.sleep(3_000)
        if a in ctx.cgroup.members:
            ctx.heartbeat(GROUP, a, gen_a)
        ctx.heartbeat(GROUP, b, gen_b)
    assert a not in ctx.cgroup.members


def test_classic_member_errors_are_the_classic_ones() -> None:
    ctx = Mixed()
    (a, gen), _ = stable_classic_group(ctx, None, "static-b")
    ctx.consumer_join("new")
    assert ctx.heartbeat(GROUP, a, gen + 5) is ErrorCode.illegal_generation
    assert ctx.heartbeat(GROUP, "nobody", gen) is ErrorCode.unknown_member_id
    assert ctx.heartbeat(GROUP, "new", 1) is ErrorCode.unknown_member_id  # not a classic member
    assert ctx.sync(GROUP, a, gen + 5).error is ErrorCode.illegal_generation
    assert ctx.consumer.validate_offset_request(GROUP, a, gen + 5) is ErrorCode.illegal_generation
    assert ctx.consumer.validate_offset_request(GROUP, a, gen) is None
    # a JoinGroup whose subscription is not the consumer protocol: a clear error, no change
    epoch = ctx.cgroup.group_epoch
    bad = ctx.join(member_id=a, protocols=(("range", b"\x00\x01\x00"),))
    assert bad.error is ErrorCode.inconsistent_group_protocol
    assert ctx.cgroup.group_epoch == epoch
    other = ctx.join(member_id=a, protocols=(("roundrobin", subscription()),))
    assert other.error is ErrorCode.inconsistent_group_protocol  # not what the others support
    # a v4+ dynamic member without an id is given one first
    required = ctx.join(version=9)
    assert required.error is ErrorCode.member_id_required and required.response.member_id


def test_a_classic_members_metadata_is_persisted_as_kafkas_tag_0() -> None:
    classic = ClassicMetadata(12_345, (("range", b"sub-1"), ("roundrobin", b"sub-2")))
    member = ConsumerMember(member_id="m", subscribed_topic_names=("t",), classic=classic)
    fields = decode_member_fields(member_metadata_record(GROUP, member).value or b"")
    assert fields.classic == classic and fields.subscribed_topic_names == ("t",)
    plain = decode_member_fields(member_metadata_record(GROUP, ConsumerMember("n")).value or b"")
    assert plain.classic is None


def test_an_upgraded_group_is_rebuilt_from_its_records_with_its_classic_members() -> None:
    ctx = Mixed()
    (a, _), (b, _) = stable_classic_group(ctx, None, "static-b")
    ctx.log.clear()
    ctx.consumer_join("new")
    loaded = Mixed()
    for record in ctx.log:
        loaded.consumer.replay(record.key, record.value)
    group, was = loaded.consumer.groups[GROUP], ctx.cgroup
    assert group.members == was.members and group.target == was.target
    assert group.group_epoch == was.group_epoch
    assert group.members[a].classic == was.members[a].classic is not None
    assert group.static_member("static-b").member_id == b  # type: ignore[union-attr]


def test_a_classic_member_replacing_the_last_consumer_member_downgrades_the_group() -> None:
    ctx = Mixed()
    (a, _), _ = stable_classic_group(ctx, None, "static-b")
    assert ctx.consumer_join("b-consumer", instance_id="static-b").error is ErrorCode.none
    owned = _assigned(ctx, "b-consumer")
    assert owned == {1, 3}
    # "static-b" rolls back to the classic protocol (Kafka's join step 4): the group is a
    # stable classic group at once, and the member syncs its partitions from it
    join = ctx.join(instance_id="static-b", protocols=(("range", subscription(owned)),))
    assert join.error is ErrorCode.none
    assert GROUP not in ctx.consumer.groups
    classic = ctx.classic
    assert classic.is_in(GroupState.STABLE) and classic.members.keys() == {
        a,
        join.response.member_id,
    }
    assert classic.generation_id == join.response.generation_id
    sync = ctx.sync(GROUP, join.response.member_id, join.response.generation_id, "static-b")
    assert sync.error is ErrorCode.none
    assert set(decode_assignment(sync.response.assignment)[TOPIC]) == {1, 3}
    assert ctx.heartbeat(GROUP, a, classic.generation_id) is ErrorCode.none
