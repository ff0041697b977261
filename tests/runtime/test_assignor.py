"""The task assignor, without a broker: stickiness, state awareness, balance, encoding."""

from __future__ import annotations

from pathlib import Path

import streamrt.runtime.engine.assignment.assignor as assignor_module
from streamrt.membership.assignment import MemberSubscription
from streamrt.membership.protocol import ConsumerSubscription
from streamrt.runtime.engine.assignment.assignor import (
    AssignmentInfo,
    StreamsPartitionAssignor,
    SubscriptionInfo,
    assign_tasks,
)
from streamrt.runtime.engine.assignment.member_assignor import MemberStreamsAssignor
from tests.source_scan import imports

TASKS = [f"0_{p}" for p in range(8)]


def member(thread: str, previous: tuple[str, ...] = (), offsets: dict[str, int] | None = None):
    return SubscriptionInfo(thread.split("-thread")[0], thread, "h:1", previous, offsets or {})


def joined(member_id: str, topics: tuple[str, ...], info: SubscriptionInfo) -> MemberSubscription:
    """A member as the leader sees it in the JoinGroup response (nothing owned yet)."""
    return MemberSubscription(
        member_id, None, ConsumerSubscription(3, topics, {}, -1, None, info.encode())
    )


def test_balanced_and_ordered_by_instance_id_not_member_id() -> None:
    members = {"zzz": member("a-thread-1"), "aaa": member("b-thread-1")}
    result = assign_tasks(TASKS, members)
    assert result["zzz"] == ["0_0", "0_2", "0_4", "0_6"]
    assert result["aaa"] == ["0_1", "0_3", "0_5", "0_7"]


def test_previous_owner_keeps_its_tasks() -> None:
    members = {
        "m1": member("a-thread-1", previous=("0_5", "0_6", "0_7", "0_4")),
        "m2": member("a-thread-2"),
    }
    result = assign_tasks(TASKS, members)
    assert result["m1"] == ["0_4", "0_5", "0_6", "0_7"]
    assert result["m2"] == ["0_0", "0_1", "0_2", "0_3"]


def test_local_state_decides_when_there_is_no_previous_owner() -> None:
    members = {
        "m1": member("a-thread-1", offsets={"0_3": 5, "0_1": 2}),
        "m2": member("b-thread-1", offsets={"0_3": 9, "0_0": 1}),
    }
    result = assign_tasks(["0_0", "0_1", "0_2", "0_3"], members)
    assert result == {"m1": ["0_1", "0_2"], "m2": ["0_0", "0_3"]}


def test_stickiness_never_breaks_balance() -> None:
    greedy = member("a-thread-1", previous=tuple(TASKS))
    result = assign_tasks(TASKS, {"m1": greedy, "m2": member("a-thread-2")})
    assert sorted(len(t) for t in result.values()) == [4, 4]


def test_newcomer_gets_its_share_when_the_old_owners_are_at_the_ceiling() -> None:
    """8 tasks, 2 instances x 2 threads holding 2 each, a third instance joins: ceil(8/6) = 2
    would let the old threads keep all 8; floor/ceil quotas give the newcomer 2 of them."""
    old = {
        f"m{i}": member(
            f"web-{1 + i // 2}-thread-{1 + i % 2}", previous=(TASKS[2 * i], TASKS[2 * i + 1])
        )
        for i in range(4)
    }
    members = {**old, "n1": member("web-3-thread-1"), "n2": member("web-3-thread-2")}
    result = assign_tasks(TASKS, members)
    assert sorted(len(t) for t in result.values()) == [1, 1, 1, 1, 2, 2]
    assert len(result["n1"]) == len(result["n2"]) == 1
    for m, prev in old.items():  # what stays, stays with its previous owner
        assert set(result[m]) <= set(prev.previous_tasks)


def test_state_on_disk_respects_the_quota_too() -> None:
    offsets = {t: 10 for t in TASKS[:7]}
    members = {
        "m1": member("a-thread-1", offsets=offsets),
        "m2": member("a-thread-2", offsets=offsets),
        "m3": member("b-thread-1"),
    }
    result = assign_tasks(TASKS[:7], members)  # ceil(7/3) = 3 alone would give 3, 3, 1
    assert sorted(len(t) for t in result.values()) == [2, 2, 3]


def test_assignor_keeps_copartitioned_topics_together_and_shares_cluster_metadata() -> None:
    seen: list[AssignmentInfo] = []
    a = MemberStreamsAssignor(
        StreamsPartitionAssignor(
            {0: ("left", "right")}, {0: ("store",)}, lambda: member("x-thread-1"), seen.append
        )
    )
    members = {
        "m1": joined("m1", ("left", "right"), member("x-thread-1")),
        "m2": joined("m2", ("left", "right"), member("y-thread-1")),
    }
    out = a.assign(members, {"left": 2, "right": 2})
    assert sorted(out["m1"]) == [("left", 0), ("right", 0)]
    assert sorted(out["m2"]) == [("left", 1), ("right", 1)]
    a.on_assignment(a.assignment_user_data("m2"))
    info = seen[0]
    assert info.tasks == ("0_1",)
    assert {t.thread_instance_id for t in info.cluster} == {"x-thread-1", "y-thread-1"}
    assert info.stores == {"0": ("store",)}
    assert AssignmentInfo.decode(info.encode()) == info


def test_foreign_member_without_user_data_is_treated_as_stateless() -> None:
    info = SubscriptionInfo.decode(b"", "member-9")
    assert info.thread_instance_id == "member-9"


def test_assignor_module_does_no_io() -> None:
    imported = {name for name, _level in imports(Path(assignor_module.__file__))}
    assert not imported & {"asyncio", "time", "socket"}


def test_a_thread_added_to_an_instance_takes_a_task_of_that_instance() -> None:
    """Issue 26, scenario (d): 3 instances x 2 threads own 12 tasks, a third thread joins
    web-1. Every task stays on its instance (its state directory): the new thread takes one of
    web-1's. Dealt per thread alone, the extra tasks went to web-1's old threads first and the
    new thread got web-3's 0_11, which it restored in full."""
    tasks = [f"0_{p}" for p in range(12)]
    threads = [f"web-{i}-thread-{t}" for i in (1, 2, 3) for t in (1, 2)]
    old = {f"m{n}": member(th, previous=(tasks[n], tasks[n + 6])) for n, th in enumerate(threads)}
    members = {**old, "new": member("web-1-thread-3")}
    result = assign_tasks(tasks, members)
    instance = {m: info.instance_id for m, info in members.items()}
    before = {t: instance[m] for m, info in old.items() for t in info.previous_tasks}
    assert {t: instance[m] for m, ts in result.items() for t in ts} == before
    assert sorted(len(t) for t in result.values()) == [1, 1, 2, 2, 2, 2, 2]
    assert len(result["new"]) == 1
    for m, info in old.items():  # what stays with its thread is what the thread had
        assert set(result[m]) <= set(info.previous_tasks)
    # Cooperatively the moved task is revoked first and owned by nobody in the second round,
    # its state on web-1's disk: the second round must give the same (else it moves on again).
    on_disk: dict[str, dict[str, int]] = {}
    for m, info in old.items():
        on_disk.setdefault(instance[m], {}).update((t, 100) for t in info.previous_tasks)
    second = {
        m: member(
            info.thread_instance_id,
            previous=tuple(t for t in info.previous_tasks if t in result[m]),
            offsets=on_disk[instance[m]],
        )
        for m, info in members.items()
    }
    assert assign_tasks(tasks, second) == result


def test_an_added_thread_whose_instance_has_nothing_to_spare_takes_from_another() -> None:
    """Balance still comes first: a's one task stays, the new thread gets one of b's."""
    members = {
        "a1": member("a-thread-1", previous=("0_0",)),
        "b1": member("b-thread-1", previous=("0_1", "0_2", "0_3")),
        "a2": member("a-thread-2"),
    }
    result = assign_tasks(["0_0", "0_1", "0_2", "0_3"], members)
    assert result == {"a1": ["0_0"], "a2": ["0_3"], "b1": ["0_1", "0_2"]}
