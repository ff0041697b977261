"""Group epochs, target assignment and reconciliation, as Kafka's GroupMetadataManagerTest
describes them for consumer groups (behaviour ported, our own code): a partition reaches its
new owner only after the old owner's heartbeat shows it revoked."""

from __future__ import annotations

from streamrt.broker.consumer_group.group import GroupState
from streamrt.broker.consumer_group.member import MemberState
from streamrt.errors import ErrorCode
from tests.broker.consumer_group.harness import Harness, parts


def test_first_member_gets_every_partition_at_epoch_1() -> None:
    h = Harness(heartbeat_interval_ms=3000)
    answer = h.join("m1")
    assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms) == ("m1", 1, 3000)
    assert parts(answer) == set(range(6))
    assert h.group.state is GroupState.STABLE and h.group.group_epoch == 1


def test_partitions_move_only_after_the_old_owner_revoked_them() -> None:
    h = Harness()
    h.join("m1")
    joined = h.join("m2")
    assert h.group.group_epoch == 2
    # m2 is at the new epoch but m1 still holds its future partitions: none yet
    assert joined.member_epoch == 2 and parts(joined) == set()
    assert h.group.members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    again = h.beat("m2", 2, {})
    assert again.assignment is None or parts(again) == set()
    # m1 learns what to give up, keeping its epoch until it has
    revoking = h.beat("m1", 1, {"t": set(range(6))})
    assert revoking.member_epoch == 1 and parts(revoking) == {0, 1, 2}
    assert h.group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert h.group.state is GroupState.RECONCILING
    still = h.beat("m1", 1, {"t": set(range(6))})  # not yet revoked: nothing moves
    assert still.member_epoch == 1
    assert h.beat("m2", 2, {}).assignment in (None, {})
    done = h.beat("m1", 1, {"t": {0, 1, 2}})
    assert done.member_epoch == 2 and done.assignment is None  # same partitions, new epoch
    released = h.beat("m2", 2, {})
    assert parts(released) == {3, 4, 5} and released.member_epoch == 2
    assert h.group.state is GroupState.STABLE


def test_leave_bumps_the_epoch_and_the_survivor_takes_over() -> None:
    h = Harness()
    h.join("m1")
    h.join("m2")
    h.beat("m1", 1, {"t": set(range(6))})
    h.beat("m1", 1, {"t": {0, 1, 2}})
    h.beat("m2", 2, {})
    left = h.beat("m2", -1)
    assert left.error == ErrorCode.none and left.member_epoch == -1
    assert "m2" not in h.group.members and h.group.group_epoch == 3
    answer = h.beat("m1", 2, {"t": {0, 1, 2}})
    assert answer.member_epoch == 3 and parts(answer) == set(range(6))


def test_session_expiry_fences_a_silent_member() -> None:
    h = Harness(session_timeout_ms=45_000)
    h.join("m1")
    h.join("m2")
    h.beat("m1", 1, {"t": set(range(6))})
    h.beat("m1", 1, {"t": {0, 1, 2}})
    for _ in range(2):  # m1 keeps heartbeating, m2 goes silent
        h.advance(20_000)
        h.beat("m1", 2, {"t": {0, 1, 2}})
    assert "m2" in h.group.members  # 40 s: still within its session
    h.advance(20_000)
    assert "m2" not in h.group.members
    answer = h.beat("m1", 2, {"t": {0, 1, 2}})
    assert parts(answer) == set(range(6)) and answer.member_epoch == 3


def test_a_member_that_does_not_revoke_in_time_is_fenced() -> None:
    h = Harness(session_timeout_ms=600_000)
    h.join("m1", rebalance_timeout_ms=10_000)
    h.join("m2")
    h.beat("m1", 1, {"t": set(range(6))})  # told to revoke 3,4,5
    h.advance(5_000)
    assert "m1" in h.group.members
    h.advance(6_000)
    assert "m1" not in h.group.members
    assert parts(h.beat("m2", 2, {})) == set(range(6))


def test_epoch_checks_fenced_and_unknown_member() -> None:
    h = Harness()
    h.join("m1")
    assert h.beat("m1", 5, {}).error == ErrorCode.fenced_member_epoch
    assert h.beat("nobody", 1, {}).error == ErrorCode.unknown_member_id
    h.join("m2")
    h.beat("m1", 1, {"t": set(range(6))})
    h.beat("m1", 1, {"t": {0, 1, 2}})  # m1 now at epoch 2, previous epoch 1
    # the previous epoch is accepted if the owned partitions fit (a lost answer) ...
    assert h.beat("m1", 1, {"t": {0, 1}}).error == ErrorCode.none
    # ... not if it claims partitions it no longer has, nor an older epoch
    assert h.beat("m1", 1, {"t": {4}}).error == ErrorCode.fenced_member_epoch


def test_rejoining_with_epoch_zero_under_the_same_id_starts_afresh() -> None:
    h = Harness()
    h.join("m1")
    answer = h.join("m1")
    assert answer.error == ErrorCode.none and parts(answer) == set(range(6))
    assert answer.member_epoch > 1


def test_new_partitions_and_new_matching_topics_bump_the_epoch() -> None:
    h = Harness({"t": 2})
    h.join("m1", ("t", "later"))
    assert h.group.group_epoch == 1
    h.topics["t"] = 4  # CreatePartitions
    answer = h.beat("m1", 1, {"t": {0, 1}})
    assert h.group.group_epoch == 2 and parts(answer) == {0, 1, 2, 3}
    h.topics["later"] = 1  # a subscribed topic created later
    answer = h.beat("m1", 2, {"t": {0, 1, 2, 3}})
    assert h.group.group_epoch == 3 and parts(answer, "later") == {0}


def test_regex_subscription_follows_topic_creation() -> None:
    h = Harness({"orders-eu": 1, "payments": 1})
    answer = h.join("m1", regex="orders-.*")
    assert set(answer.assignment or {}) == {"orders-eu"}
    h.topics["orders-us"] = 2
    answer = h.beat("m1", 1, {"orders-eu": {0}})
    assert parts(answer, "orders-us") == {0, 1}
    bad = h.join("m2", regex="orders-(")
    assert bad.error == ErrorCode.invalid_regular_expression
    assert bad.message == (
        "SubscribedTopicRegex `orders-(` is not a valid regular expression: missing ): orders-(."
    )


def test_a_backtracking_regex_cannot_stall_the_coordinator() -> None:
    """RE2, as Kafka's RE2/J, matches in linear time; Python's ``re`` would backtrack 2^248
    times on this pattern and topic name and never answer (the broker's event loop with it)."""
    h = Harness({"a" * 248 + "!": 1, "aaa": 1})
    answer = h.join("m1", regex="(a+)+$")
    assert set(answer.assignment or {}) == {"aaa"}


def test_server_assignor_range_and_unknown_assignor() -> None:
    h = Harness({"a": 3, "b": 3})
    h.join("m1", ("a", "b"), assignor="range")
    h.join("m2", ("a", "b"), assignor="range")
    assert h.group.assignor_name == "range"
    assert h.group.target["m1"] == {"a": frozenset({0, 1}), "b": frozenset({0, 1})}
    assert h.join("m3", assignor="sticky").error == ErrorCode.unsupported_assignor
    # the assignor most members ask for wins (Kafka's computePreferredServerAssignor)
    h.join("m4", ("a", "b"), assignor="uniform")
    assert h.group.assignor_name == "range"


def test_invalid_requests_get_kafkas_messages() -> None:
    h = Harness()
    answer = h.join("")
    assert (
        answer.error == ErrorCode.invalid_request and answer.message == "MemberId can't be empty."
    )
    assert h.beat("m1", -2).error == ErrorCode.invalid_request  # -2 needs an instance id
    assert h.beat("m1", -3).error == ErrorCode.invalid_request
    # no such group (e.g. after a restart: groups are not persisted): rejoin, not fatal
    assert h.beat("m1", 1).error == ErrorCode.unknown_member_id


def test_a_group_id_held_by_an_active_classic_group_is_refused() -> None:
    h = Harness()
    answer = h.join("m1", classic_active=True)
    assert answer.error == ErrorCode.group_id_not_found
    assert "not a consumer group" in (answer.message or "")


def test_offset_commit_checks_member_and_epoch() -> None:
    h = Harness()
    h.join("m1")
    check = h.coordinator.validate_offset_request
    assert check("g", "m1", 1) is None
    assert check("g", "m1", 0) == ErrorCode.stale_member_epoch
    assert check("g", "ghost", 1) == ErrorCode.unknown_member_id
    assert check("g", "", -1) == ErrorCode.unknown_member_id  # members present: no admin commit
    assert check("g", None, -1, fetch=True) is None
    h.beat("m1", -1)
    assert check("g", "", -1) is None  # an empty group takes admin commits


def test_group_max_size_refuses_one_more_member() -> None:
    h = Harness(max_size=2)
    h.join("m1")
    h.join("m2")
    full = h.join("m3")
    assert full.error == ErrorCode.group_max_size_reached
    assert full.message == "The consumer group has reached its maximum capacity of 2 members."
    assert set(h.group.members) == {"m1", "m2"}
    assert h.join("m2").error == ErrorCode.none  # a member already in may rejoin
