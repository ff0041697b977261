"""The streams-group state machine (KIP-1071) on a manual clock: joins, the group epoch and the
target, reconciliation (a task moves only once its owner revoked it), topology statuses and
errors, timeouts, shutdown, endpoints for interactive queries, standbys, offset checks."""

from __future__ import annotations

import dataclasses

from streamrt.broker.streams_group.member import MemberState
from streamrt.broker.streams_group.requests import StreamsHeartbeatRequest
from streamrt.broker.streams_group.topology import StreamsTopology, Subtopology, TopicInfo
from streamrt.errors import ErrorCode
from tests.broker.streams_group.coordinator_harness import (
    CHANGELOG,
    GROUP,
    REPARTITION,
    Harness,
    actives,
    count_topology,
    stateless_topology,
    tasks,
)


def test_first_member_gets_every_task_and_the_group_becomes_stable() -> None:
    h = Harness()
    a = h.join("a")
    assert a.error == ErrorCode.none and a.member_epoch == 1
    assert actives(a.tasks) == {0, 1, 2, 3} and a.status == ()
    assert a.heartbeat_interval_ms == 5000
    again = h.beat("a", 1, a.tasks)
    assert again.tasks is None and again.member_epoch == 1  # unchanged: not resent
    assert h.group.state.value == "Stable"


def test_a_task_moves_only_after_its_owner_revoked_it() -> None:
    h = Harness()
    a = h.join("a")
    b = h.join("b")
    assert b.member_epoch == 2 and actives(b.tasks) == set()  # its tasks are still a's
    assert h.group.members["b"].state is MemberState.UNRELEASED_TASKS
    a2 = h.beat("a", 1, a.tasks)
    assert h.group.members["a"].state is MemberState.UNREVOKED_TASKS
    kept = actives(a2.tasks)
    assert len(kept) == 2 and a2.member_epoch == 1  # the epoch waits for the revocation
    assert h.beat("b", 2, tasks()).tasks is None  # still unreleased
    a3 = h.beat("a", 1, a2.tasks)  # revoked
    assert a3.member_epoch == 2 and h.group.members["a"].state is MemberState.STABLE
    b3 = h.beat("b", 2, tasks())
    assert actives(b3.tasks) == {0, 1, 2, 3} - kept
    assert h.group.state.value == "Stable"


def test_missing_source_topic_is_a_status_and_gives_no_tasks() -> None:
    h = Harness(topics={})
    a = h.join("a")
    assert a.error == ErrorCode.none and a.tasks is not None and a.tasks.is_empty()
    assert [code for code, _ in a.status] == [1]  # MISSING_SOURCE_TOPICS
    assert h.group.state.value == "NotReady"
    h.topics["in"] = 2
    b = h.beat("a", a.member_epoch, tasks())
    assert actives(b.tasks) == {0, 1} and b.status == ()


def test_internal_topics_are_asked_for_then_tasks_follow_once_they_exist() -> None:
    h = Harness()
    a = h.join("a", topology=count_topology())
    assert [code for code, _ in a.status] == [3]  # MISSING_INTERNAL_TOPICS
    assert set(a.topics_to_create) == {REPARTITION, CHANGELOG}
    assert a.topics_to_create[CHANGELOG][0] == 4  # as many partitions as tasks
    assert a.tasks is not None and a.tasks.is_empty()
    h.topics.update({REPARTITION: 4, CHANGELOG: 4})
    b = h.beat("a", a.member_epoch, tasks())
    assert b.status == () and b.topics_to_create == {}
    assert actives(b.tasks, "0") == actives(b.tasks, "1") == {0, 1, 2, 3}


def test_bad_requests_get_kafkas_errors_and_leave_the_group_as_it_was() -> None:
    h = Harness()
    a = h.join("a")
    epoch = h.group.group_epoch
    bad_changelog = StreamsTopology(
        1, (Subtopology("0", ("in",), state_changelog_topics=(TopicInfo("c", 3),)),)
    )
    cases = [
        (h.join("", topology=stateless_topology()), ErrorCode.invalid_request),
        (h.join("x", topology=bad_changelog), ErrorCode.streams_invalid_topology),
        (h.join("x", topology=stateless_topology(2)), ErrorCode.streams_invalid_topology_epoch),
        (h.beat("a", 1, tasks({"9": {0}})), ErrorCode.invalid_request),
        (h.beat("a", 1, tasks({"0": {7}})), ErrorCode.invalid_request),
        (h.beat("a", 5, a.tasks), ErrorCode.fenced_member_epoch),
        (h.beat("nobody", 1, tasks()), ErrorCode.unknown_member_id),
        (h.beat("a", -3), ErrorCode.invalid_request),
    ]
    for answer, code in cases:
        assert answer.error == code, answer
        assert answer.message
    assert set(h.group.members) == {"a"} and h.group.group_epoch == epoch
    other = h.coordinator.heartbeat(
        StreamsHeartbeatRequest(GROUP, "x", 1, owned=tasks(), topology=stateless_topology())
    )
    assert other.error == ErrorCode.invalid_request  # a topology only on a join


def test_an_older_topology_epoch_is_reported_stale() -> None:
    h = Harness()
    h.join("a", topology=stateless_topology(3))
    b = h.join("b", topology=stateless_topology(2))
    assert b.error == ErrorCode.none
    assert [code for code, _ in b.status] == [0]  # STALE_TOPOLOGY


def test_session_expiry_and_rebalance_timeout_fence_members() -> None:
    h = Harness(session_timeout_ms=10_000)
    a = h.join("a")
    h.join("b")
    h.beat("a", 1, a.tasks)  # a must revoke two tasks now
    for _ in range(3):
        h.advance(7_000)
        h.beat("b", 2, tasks())
    # a neither revoked (rebalance timeout 30 s) nor heartbeated (session 10 s): gone
    assert set(h.group.members) == {"b"}
    held = h.settle("b")
    assert actives(held["b"]) == {0, 1, 2, 3}


def test_shutdown_request_reaches_every_member() -> None:
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat("a", 1, None, shutdown=True)
    status = h.beat("b", 2, tasks()).status
    assert [code for code, _ in status] == [4]  # SHUTDOWN_APPLICATION
    assert "a" in status[0][1]


def test_partitions_by_user_endpoint_follow_the_assignment() -> None:
    h = Harness()
    a = h.join("a", endpoint=("host-a", 8080))
    assert a.endpoint_information_epoch == 1
    assert a.partitions_by_user_endpoint is not None
    (only,) = a.partitions_by_user_endpoint
    assert (only.host, only.port) == ("host-a", 8080) and only.active == {"in": frozenset(range(4))}
    again = h.beat("a", 1, a.tasks, endpoint_epoch=a.endpoint_information_epoch)
    assert again.partitions_by_user_endpoint is None  # the member is up to date


def test_standby_tasks_go_to_another_process() -> None:
    h = Harness(topics={"in": 2, REPARTITION: 2, CHANGELOG: 2}, num_standby_replicas=1)
    h.join("a", topology=count_topology())
    h.join("b", topology=count_topology())
    held = h.settle("a", "b")
    for me, other in (("a", "b"), ("b", "a")):
        stand = held[me].standby.get("1", frozenset())
        assert stand == held[other].active.get("1", frozenset())  # the other's stateful tasks
        assert not held[me].standby.get("0")  # stateless: no standbys


def test_offset_commits_are_checked_against_member_and_topology_epochs() -> None:
    h = Harness()
    a = h.join("a")
    check = h.coordinator.validate_offset_request
    assert check(GROUP, "a", a.member_epoch) is None
    assert check(GROUP, "a", a.member_epoch + 1) == ErrorCode.stale_member_epoch
    assert check(GROUP, "zz", 1) == ErrorCode.unknown_member_id
    h.group.topology = dataclasses.replace(h.group.topology, epoch=2)
    assert check(GROUP, "a", a.member_epoch) == ErrorCode.streams_topology_fenced


def test_replication_factor_minus_one_means_the_broker_default() -> None:
    """Kafka Streams 4.3.1 sends -1 (its ``replication.factor`` default) for internal topics."""
    h = Harness()
    topology = count_topology()
    subs = tuple(
        dataclasses.replace(
            s,
            repartition_source_topics=tuple(
                dataclasses.replace(t, replication_factor=-1) for t in s.repartition_source_topics
            ),
            state_changelog_topics=tuple(
                dataclasses.replace(t, replication_factor=-1) for t in s.state_changelog_topics
            ),
        )
        for s in topology.subtopologies
    )
    a = h.join("a", topology=dataclasses.replace(topology, subtopologies=subs))
    assert a.error == ErrorCode.none, a.message
    assert set(a.topics_to_create) == {REPARTITION, CHANGELOG}
