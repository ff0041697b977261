"""The sticky task assignor on scenarios from Kafka's StickyTaskAssignorTest (rewritten):
balance over processes and members, active stickiness, standby placement, static members."""

from __future__ import annotations

import pytest

from streamrt.broker.streams_group.task_assignor import TaskAssignorError
from tests.broker.streams_group.assignor_support import (
    Topology,
    active_count,
    all_active,
    as_previous,
    flat,
    member,
    run,
    stateful,
    stateless,
    tasks,
)


def test_one_active_task_per_process_when_counts_match() -> None:
    members = {f"m{i}": member(f"p{i}") for i in range(3)}
    result = run(members, stateless(s=3))
    assert [active_count(result, m) for m in members] == [1, 1, 1]
    assert all_active(result) == [("s", 0), ("s", 1), ("s", 2)]


def test_even_spread_over_members_of_several_processes() -> None:
    members = {f"m{p}_{i}": member(f"p{p}") for p in range(3) for i in range(2)}
    result = run(members, stateless(s1=3, s2=3))
    assert {active_count(result, m) for m in members} == {1}
    assert all_active(result) == sorted((s, p) for s in ("s1", "s2") for p in range(3))


def test_even_spread_with_standbys_on_other_processes() -> None:
    members = {f"m{p}_{i}": member(f"p{p}") for p in range(3) for i in range(2)}
    result = run(members, stateful(s1=3, s2=3), standbys=1)
    assert {active_count(result, m) for m in members} == {1}
    assert {len(flat(a.standby)) for a in result.members.values()} == {1}
    for mid, assignment in result.members.items():
        (task,) = flat(assignment.standby)
        owner = next(m for m, a in result.members.items() if task in flat(a.active))
        assert owner[:2] != mid[:2], "a standby sits on the process of its active"


def test_active_tasks_do_not_migrate_to_another_process() -> None:
    members = {"m1": member("p1", tasks(s={0})), "m2": member("p2", tasks(s={1}))}
    result = run(members, stateless(s=3))
    assert 0 in result.members["m1"].active["s"] and 1 in result.members["m2"].active["s"]
    # m1 is replaced by m3 on the same process, which reports task 2
    members = {"m2": member("p2", tasks(s={1})), "m3": member("p1", tasks(s={2}))}
    result = run(members, stateless(s=3))
    assert 1 in result.members["m2"].active["s"] and 2 in result.members["m3"].active["s"]
    assert all_active(result) == [("s", 0), ("s", 1), ("s", 2)]


def test_new_process_takes_tasks_without_reshuffling_everything() -> None:
    members = {
        "m1": member("p1", tasks(s={0, 2})),
        "m2": member("p2", tasks(s={1})),
        "m3": member("p3"),
    }
    result = run(members, stateless(s=3))
    assert result.members["m2"].active == tasks(s={1})
    assert len(result.members["m1"].active["s"] & {0, 2}) == 1
    assert result.members["m3"].active["s"] | result.members["m1"].active["s"] == {0, 2}


def test_a_process_with_more_members_takes_more_tasks() -> None:
    members = {"m1": member("p1"), "m2_1": member("p2"), "m2_2": member("p2")}
    result = run(members, stateless(s=3))
    assert [active_count(result, m) for m in members] == [1, 1, 1]


def test_unequal_subtopologies_balance_by_total_count() -> None:
    before = tasks(s1={0, 1, 2, 3, 4, 5}, s2={0})
    members = {"m1": member("p1", before), "m2": member("p2")}
    result = run(members, stateless(s1=6, s2=1))
    assert (active_count(result, "m1"), active_count(result, "m2")) == (4, 3)
    assert flat(result.members["m1"].active) <= flat(before)


def test_previous_owners_keep_their_tasks_when_members_outnumber_tasks() -> None:
    members = {
        "m1": member("p1", tasks(s={0})),
        "m2": member("p2", tasks(s={2})),
        "m3": member("p3", tasks(s={1})),
        "m4": member("p4"),
        "m5": member("p5"),
    }
    result = run(members, stateless(s=3))
    assert result.members["m1"].active == tasks(s={0})
    assert result.members["m2"].active == tasks(s={2})
    assert result.members["m3"].active == tasks(s={1})
    assert not result.members["m4"].active and not result.members["m5"].active


def test_active_goes_to_the_previous_standby_when_its_owner_left() -> None:
    # task 0's owner left; m2 held it as standby, m4 is new and idle: m2 takes it over
    members = {
        "m2": member("p2", standby=tasks(s={0})),
        "m3": member("p3", tasks(s={1})),
        "m4": member("p4"),
    }
    result = run(members, stateful(s=3))
    assert result.members["m2"].active == tasks(s={0})
    assert result.members["m3"].active == tasks(s={1})
    assert result.members["m4"].active == tasks(s={2})


def test_a_previous_standby_over_quota_does_not_take_the_active() -> None:
    # m2 keeps its own task 1 and is then at its quota of 1: task 0 goes to the idle m4
    members = {
        "m2": member("p2", tasks(s={1}), standby=tasks(s={0})),
        "m3": member("p3", tasks(s={2})),
        "m4": member("p4"),
    }
    result = run(members, stateful(s=3))
    assert result.members["m2"].active == tasks(s={1})
    assert result.members["m4"].active == tasks(s={0})


def test_warmup_counts_as_a_previous_standby() -> None:
    members = {"m1": member("p1"), "m2": member("p2", warmup=tasks(s={0}))}
    result = run(members, stateful(s=1))
    assert result.members["m2"].active == tasks(s={0})
    assert not result.members["m2"].warmup  # the sticky assignor plans no warm-ups


def test_standbys_are_sticky_to_their_previous_holders() -> None:
    members = {
        "m1": member("p1", tasks(s={0}), standby=tasks(s={1})),
        "m2": member("p2", tasks(s={1}), standby=tasks(s={2})),
        "m3": member("p3", tasks(s={2}), standby=tasks(s={0})),
    }
    result = run(members, stateful(s=3), standbys=1)
    assert [result.members[m].standby for m in ("m1", "m2", "m3")] == [
        tasks(s={1}),
        tasks(s={2}),
        tasks(s={0}),
    ]


def test_no_standbys_for_stateless_subtopologies() -> None:
    members = {f"m{i}": member(f"p{i}") for i in range(3)}
    result = run(members, stateless(s=4), standbys=2)
    assert not any(a.standby for a in result.members.values())


def test_standbys_are_capped_by_the_number_of_other_processes() -> None:
    # two processes (one with two members) cannot hold more than one standby per task
    members = {"a1": member("pa"), "a2": member("pa"), "b": member("pb")}
    result = run(members, stateful(s=4), standbys=2)
    assert sum(len(flat(a.standby)) for a in result.members.values()) == 4
    pa = flat(result.members["a1"].active) | flat(result.members["a2"].active)
    pa_standby = flat(result.members["a1"].standby) | flat(result.members["a2"].standby)
    assert not pa & pa_standby


def test_stateful_and_stateless_are_balanced_separately() -> None:
    members = {"m1": member("p1"), "m2": member("p2")}
    topology = Topology({"a": 2, "b": 2}, frozenset({"a"}))
    result = run(members, topology)
    for m in members:
        assert len(result.members[m].active["a"]) == 1 and len(result.members[m].active["b"]) == 1


def test_a_static_member_that_restarts_keeps_its_tasks() -> None:
    """A static member (instance id i1, process p1) restarts and rejoins with a new member id;
    the coordinator hands the new member the old one's assignment, and the assignor leaves it
    there even though the other members would gladly take tasks."""
    processes = {"old": "p1", "m2": "p2", "m3": "p3"}
    members = {m: member(p, instance_id="i1" if m == "old" else None) for m, p in processes.items()}
    first = run(members, stateful(s=6, t=3), standbys=1)
    before = first.members["old"]
    rejoined = as_previous(first, processes)
    spec = rejoined.pop("old")
    rejoined["new"] = member("p1", spec.active_tasks, spec.standby_tasks, instance_id="i1")
    second = run(rejoined, stateful(s=6, t=3), standbys=1)
    assert second.members["new"].active == before.active
    assert second.members["new"].standby == before.standby
    for m in ("m2", "m3"):
        assert second.members[m] == first.members[m]


def test_same_input_same_output_whatever_the_member_order() -> None:
    members = {f"m{i}": member(f"p{i % 3}", tasks(s={i})) for i in range(7)}
    reordered = dict(reversed(list(members.items())))
    topology = stateful(s=10, t=5)
    assert run(members, topology, 1) == run(reordered, topology, 1) == run(members, topology, 1)


def test_empty_group_and_bad_standby_count() -> None:
    assert run({}, stateless(s=3)).members == {}
    with pytest.raises(TaskAssignorError, match=r"num\.standby\.replicas"):
        run({"m": member("p")}, stateless(s=1), standbys=-1)


def test_standby_holders_get_the_actives_when_nobody_owned_them() -> None:
    members = {
        "m1": member("p1", standby=tasks(s={2})),
        "m2": member("p2", standby=tasks(s={1})),
        "m3": member("p3", standby=tasks(s={0})),
    }
    result = run(members, stateless(s=3))
    assert [result.members[m].active for m in members] == [
        tasks(s={2}),
        tasks(s={1}),
        tasks(s={0}),
    ]


def test_a_warmup_holder_takes_the_unowned_task_over_a_less_loaded_member() -> None:
    members = {
        "m1": member("p1", tasks(s={0, 1, 2})),
        "m2": member("p2", tasks(s={3, 4, 5})),
        "m3": member("p3", tasks(s={6, 7}), warmup=tasks(s={8})),
        "m4": member("p4", tasks(s={9})),
    }
    result = run(members, stateful(s=12))
    assert result.members["m3"].active == tasks(s={6, 7, 8})
    assert result.members["m4"].active == tasks(s={9, 10, 11})


def test_a_warmup_holder_gets_the_standby_over_an_idle_member() -> None:
    members = {
        "m1": member("p1", tasks(s={0})),
        "m2": member("p2", tasks(s={1})),
        "m3": member("p3", tasks(s={2}), warmup=tasks(s={1})),
        "m4": member("p4"),
    }
    result = run(members, stateful(s=3), standbys=1)
    assert result.members["m3"].active == tasks(s={2})
    assert result.members["m3"].standby == tasks(s={1})
    assert 1 not in result.members["m4"].standby.get("s", frozenset())


def test_previous_standbys_become_active_and_standby_swaps() -> None:
    members = {"m1": member("p1", standby=tasks(s={0})), "m2": member("p2", standby=tasks(s={1}))}
    result = run(members, stateful(s=2), standbys=1)
    assert (result.members["m1"].active, result.members["m1"].standby) == (
        tasks(s={0}),
        tasks(s={1}),
    )
    assert (result.members["m2"].active, result.members["m2"].standby) == (
        tasks(s={1}),
        tasks(s={0}),
    )


def test_a_full_previous_standby_leaves_the_task_to_an_idle_member() -> None:
    members = {
        "m1": member("p1", tasks(s={0}), standby=tasks(s={1})),
        "m2_1": member("p2", tasks(s={2}), standby=tasks(s={1})),
        "m2_2": member("p2"),
    }
    result = run(members, stateless(s=3))
    assert [result.members[m].active for m in members] == [
        tasks(s={0}),
        tasks(s={2}),
        tasks(s={1}),
    ]


def test_two_standby_replicas_on_three_processes() -> None:
    members = {f"m{i}": member(f"p{i}", tasks(s={i})) for i in range(3)}
    result = run(members, stateful(s=3), standbys=2)
    assert [result.members[m].standby for m in members] == [
        tasks(s={1, 2}),
        tasks(s={0, 2}),
        tasks(s={0, 1}),
    ]


def test_a_lone_process_gets_no_standby() -> None:
    result = run({"m": member("p")}, stateful(s=1), standbys=1)
    assert result.members["m"].active == tasks(s={0}) and not result.members["m"].standby


def test_actives_and_standbys_balance_over_idle_members() -> None:
    members = {f"m{i}": member(f"p{i}") for i in range(6)}
    result = run(members, stateful(s=3), standbys=1)
    for a in result.members.values():
        assert len(flat(a.active)) + len(flat(a.standby)) == 1


def test_a_process_with_two_members_takes_twice_the_tasks() -> None:
    members = {"m1": member("p1"), "m2_1": member("p2"), "m2_2": member("p2")}
    result = run(members, stateless(s0=3, s1=3, s2=3, s3=3))
    assert active_count(result, "m1") == 4
    assert active_count(result, "m2_1") + active_count(result, "m2_2") == 8


def test_an_overloaded_member_gives_up_only_what_it_must() -> None:
    members = {
        "m1": member("p1"),
        "m2": member("p2"),
        "m3": member("p3", tasks(s={0, 1, 2, 3})),
    }
    result = run(members, stateless(s=4))
    assert [active_count(result, m) for m in members] == [1, 1, 2]
    assert flat(result.members["m3"].active) <= {("s", p) for p in range(4)}
