"""Standby and warm-up placement (KIP-441), without a broker: pure assignor logic."""

from __future__ import annotations

from streamrt.runtime.engine.assignment.assignor import (
    AssignmentInfo,
    PlacementConfig,
    StreamsPartitionAssignor,
    SubscriptionInfo,
    TaskPlacement,
    place_tasks,
)
from streamrt.runtime.engine.assignment.member_assignor import MemberStreamsAssignor
from tests.runtime.test_assignor import joined

TASKS = [f"0_{p}" for p in range(6)]


def member(
    thread: str,
    previous: tuple[str, ...] = (),
    offsets: dict[str, int] | None = None,
    standbys: tuple[str, ...] = (),
) -> SubscriptionInfo:
    return SubscriptionInfo(
        thread.split("-thread")[0], thread, None, previous, offsets or {}, standbys
    )


def instance_of(plan_members: dict[str, SubscriptionInfo], member_id: str) -> str:
    return plan_members[member_id].instance_id


def holders(plan: TaskPlacement, members: dict[str, SubscriptionInfo], task: str) -> tuple:
    active = [instance_of(members, m) for m, ts in plan.active.items() if task in ts]
    standby = [instance_of(members, m) for m, ts in plan.standby.items() if task in ts]
    return active, standby


def test_standbys_never_share_an_instance_with_the_active_even_across_threads() -> None:
    members = {
        "m1": member("a-thread-1"),
        "m2": member("a-thread-2"),
        "m3": member("b-thread-1"),
        "m4": member("c-thread-1"),
    }
    plan = place_tasks(TASKS, members, config=PlacementConfig(num_standby_replicas=2))
    for task in TASKS:
        active, standby = holders(plan, members, task)
        assert len(active) == 1 and len(standby) == 2
        assert len({*active, *standby}) == 3, (task, active, standby)


def test_standbys_are_spread_and_short_when_there_are_too_few_instances() -> None:
    members = {"m1": member("a-thread-1"), "m2": member("b-thread-1"), "m3": member("c-thread-1")}
    plan = place_tasks(TASKS, members, config=PlacementConfig(num_standby_replicas=1))
    per_member = sorted(len(ts) for ts in plan.standby.values())
    assert per_member == [2, 2, 2]
    two = {"m1": member("a-thread-1"), "m2": member("a-thread-2")}
    alone = place_tasks(TASKS, two, config=PlacementConfig(num_standby_replicas=1))
    assert all(not ts for ts in alone.standby.values())  # one instance: nowhere to put them


def test_no_standbys_by_default_and_none_for_stateless_tasks() -> None:
    members = {"m1": member("a-thread-1"), "m2": member("b-thread-1")}
    assert all(not ts for ts in place_tasks(TASKS, members).standby.values())
    plan = place_tasks(
        TASKS, members, stateful=["0_0", "0_1"], config=PlacementConfig(num_standby_replicas=1)
    )
    assert sorted(t for ts in plan.standby.values() for t in ts) == ["0_0", "0_1"]


def test_standbys_are_sticky() -> None:
    config = PlacementConfig(num_standby_replicas=1)
    members = {
        "m1": member("a-thread-1", previous=("0_0", "0_1"), standbys=("0_4", "0_5")),
        "m2": member("b-thread-1", previous=("0_2", "0_3"), standbys=("0_0", "0_1")),
        "m3": member("c-thread-1", previous=("0_4", "0_5"), standbys=("0_2", "0_3")),
    }
    plan = place_tasks(TASKS, members, config=config)
    assert plan.active == {"m1": ["0_0", "0_1"], "m2": ["0_2", "0_3"], "m3": ["0_4", "0_5"]}
    assert plan.standby == {"m1": ["0_4", "0_5"], "m2": ["0_0", "0_1"], "m3": ["0_2", "0_3"]}
    assert plan.warmup_count == 0 and not plan.probing_rebalance_needed


def test_lost_instance_hands_its_tasks_to_the_caught_up_standby() -> None:
    """c is gone: its tasks go to the instance with their standby, not to the balanced one."""
    config = PlacementConfig(num_standby_replicas=1, acceptable_recovery_lag=100)
    offsets_a = {"0_0": 5000, "0_1": 5000, "0_4": 4990, "0_5": 4995}
    members = {
        "m1": member("a-thread-1", previous=("0_0", "0_1"), offsets=offsets_a),
        "m2": member("b-thread-1", previous=("0_2", "0_3"), offsets={"0_2": 5000, "0_3": 5000}),
    }
    # b has no state for 0_4/0_5 at all; a is caught up on them.
    plan = place_tasks(TASKS, members, config=config)
    a_tasks = plan.active["m1"]
    assert "0_4" in a_tasks and "0_5" in a_tasks
    # balance gave 0_5 to b, which is not caught up on it: a keeps it, b warms it up
    assert plan.warmups["m2"] == ["0_5"] and plan.moved == 1
    assert plan.probing_rebalance_needed


def test_caught_up_preference_moves_an_active_and_adds_a_warm_up() -> None:
    """A new instance joins: balance wants tasks on it, but its state is far behind."""
    config = PlacementConfig(acceptable_recovery_lag=100, max_warmup_replicas=2)
    offsets = {t: 10_000 for t in TASKS}
    members = {
        "m1": member("a-thread-1", previous=tuple(TASKS), offsets=offsets),
        "m2": member("b-thread-1"),
    }
    plan = place_tasks(TASKS, members, config=config)
    assert plan.active["m1"] == TASKS  # everything stays where the state is
    assert plan.active["m2"] == []
    assert plan.warmups["m2"] == ["0_3", "0_4"]  # the budget: 2 warm-ups
    assert plan.standby["m2"] == ["0_3", "0_4"]
    assert plan.moved == 3 and plan.probing_rebalance_needed


def test_warm_ups_that_caught_up_take_their_tasks_at_the_probing_rebalance() -> None:
    config = PlacementConfig(acceptable_recovery_lag=100, max_warmup_replicas=2)
    offsets = {t: 10_000 for t in TASKS}
    warmed = {"0_3": 9_950, "0_4": 10_000}
    members = {
        "m1": member("a-thread-1", previous=tuple(TASKS), offsets=offsets),
        "m2": member("b-thread-1", offsets=warmed, standbys=("0_3", "0_4")),
    }
    plan = place_tasks(TASKS, members, config=config)
    assert plan.active["m2"][:2] == ["0_3", "0_4"]
    assert "0_5" in plan.active["m1"]  # not warmed yet: stays, warm-up next
    assert plan.warmups["m2"] == ["0_5"]
    # and once 0_5 caught up too, the group is balanced with no warm-ups left
    members["m2"] = member("b-thread-1", previous=("0_3", "0_4"), offsets={**warmed, "0_5": 10_000})
    members["m1"] = member("a-thread-1", previous=("0_0", "0_1", "0_2", "0_5"), offsets=offsets)
    final = place_tasks(TASKS, members, config=config)
    assert final.active == {"m1": ["0_0", "0_1", "0_2"], "m2": ["0_3", "0_4", "0_5"]}
    assert not final.probing_rebalance_needed


def test_nobody_caught_up_means_no_moves() -> None:
    config = PlacementConfig(acceptable_recovery_lag=0)
    members = {
        "m1": member("a-thread-1", offsets={"0_0": 10}),
        "m2": member("b-thread-1", offsets={"0_0": 10}),
    }
    plan = place_tasks(["0_0", "0_1"], members, config=config)
    assert plan.moved == 0 and plan.warmup_count == 0


def test_assignor_sends_each_member_its_standbys_and_reports_the_plan() -> None:
    plans: list[TaskPlacement] = []
    seen: list[AssignmentInfo] = []
    a = MemberStreamsAssignor(
        StreamsPartitionAssignor(
            {0: ("in",)},
            {0: ("store",)},
            lambda: member("x-thread-1"),
            seen.append,
            placement=PlacementConfig(num_standby_replicas=1),
            on_placement=plans.append,
        )
    )
    members = {
        "m1": joined("m1", ("in",), member("x-thread-1")),
        "m2": joined("m2", ("in",), member("y-thread-1")),
    }
    a.assign(members, {"in": 2})
    for m in ("m1", "m2"):
        a.on_assignment(a.assignment_user_data(m))
    info_1, info_2 = seen
    assert info_1.tasks == ("0_0",) and info_1.standby_tasks == ("0_1",)
    assert info_2.tasks == ("0_1",) and info_2.standby_tasks == ("0_0",)
    assert {t.thread_instance_id: t.standby_tasks for t in info_1.cluster} == {
        "x-thread-1": ("0_1",),
        "y-thread-1": ("0_0",),
    }
    assert AssignmentInfo.decode(info_1.encode()) == info_1
    assert plans and not plans[0].probing_rebalance_needed
    sub = member("x-thread-1", standbys=("0_1",))
    assert SubscriptionInfo.decode(sub.encode(), "m").previous_standbys == ("0_1",)


def test_config_keys_are_accepted_and_checked() -> None:
    import pytest

    from streamrt.errors import ConfigError
    from streamrt.runtime.config import StreamsConfig

    cfg = StreamsConfig.from_mapping(
        {
            "application.id": "x",
            "num.standby.replicas": "1",
            "acceptable.recovery.lag": "50",
            "max.warmup.replicas": "3",
            "probing.rebalance.interval.ms": "60000",
        }
    )
    assert (cfg.num_standby_replicas, cfg.acceptable_recovery_lag) == (1, 50)
    assert (cfg.max_warmup_replicas, cfg.probing_rebalance_interval_ms) == (3, 60_000)
    defaults = StreamsConfig.from_mapping({"application.id": "x"})
    assert defaults.num_standby_replicas == 0 and defaults.acceptable_recovery_lag == 10_000
    assert defaults.max_warmup_replicas == 2
    assert defaults.probing_rebalance_interval_ms == 600_000
    for key, bad in (
        ("num.standby.replicas", "-1"),
        ("acceptable.recovery.lag", "-1"),
        ("max.warmup.replicas", "0"),
        ("probing.rebalance.interval.ms", "59999"),
    ):
        with pytest.raises(ConfigError, match=key):
            StreamsConfig.from_mapping({"application.id": "x", key: bad})


def test_lag_is_the_changelog_end_minus_the_checkpoint_as_in_kafka_streams() -> None:
    """The previous owner left; instance a kept 20k of each task's changelog, b has nothing.
    Against the most advanced copy a would look caught up; against the changelog end it is
    caught up only when the end is within acceptable.recovery.lag of its checkpoint."""
    config = PlacementConfig(acceptable_recovery_lag=10_000, max_warmup_replicas=6)
    members = {
        "m1": member("a-thread-1", offsets={t: 20_000 for t in TASKS}),
        "m2": member("b-thread-1"),
    }
    far = place_tasks(TASKS, members, config=config, ends={t: 100_000 for t in TASKS})
    assert far.moved == 0 and far.warmup_count == 0  # nobody caught up: stay balanced
    assert [len(far.active[m]) for m in ("m1", "m2")] == [3, 3]
    near = place_tasks(TASKS, members, config=config, ends={t: 25_000 for t in TASKS})
    assert near.active["m1"] == TASKS and near.warmups["m2"] == ["0_3", "0_4", "0_5"]
    unknown = place_tasks(TASKS, members, config=config)  # ends not listed: best copy
    assert unknown.active == near.active
    # an end listed before a checkpoint moved past it is raised to that checkpoint
    stale = place_tasks(TASKS, members, config=config, ends={t: 15_000 for t in TASKS})
    assert stale.active == near.active


def test_assignor_measures_lag_against_the_task_ends_it_is_given() -> None:
    asked: list[list[str]] = []
    plans: list[TaskPlacement] = []

    def ends(tasks: object) -> dict[str, int]:
        asked.append(sorted(tasks))  # type: ignore[call-overload]
        return {"0_0": 50_000, "0_1": 50_000}

    a = MemberStreamsAssignor(
        StreamsPartitionAssignor(
            {0: ("in",)},
            {0: ("store",)},
            lambda: member("x-thread-1"),
            lambda _info: None,
            placement=PlacementConfig(acceptable_recovery_lag=100),
            on_placement=plans.append,
            task_ends=ends,
        )
    )
    behind = member("x-thread-1", offsets={"0_0": 40_000, "0_1": 40_000})
    members = {
        "m1": joined("m1", ("in",), behind),
        "m2": joined("m2", ("in",), member("y-thread-1")),
    }
    a.assign(members, {"in": 2})
    assert asked == [["0_0", "0_1"]]
    assert plans[0].moved == 0  # x is 10k behind the end: not caught up, no move
