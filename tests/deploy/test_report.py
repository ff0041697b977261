"""The report's arithmetic on hand-made events and records."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from streamrt.deploy.report import (
    check_output,
    count_rebalances,
    count_restores,
    find_leader,
    gap_series,
    handoff_timelines,
    longest_gaps,
)
from streamrt.deploy.rolling import RestartStep, Timeline


def event(ts: float, type_: str, pid: int = 1, thread: int = 1, **fields: object) -> dict:
    return {"ts": ts, "type": type_, "pid": pid, "thread": thread, "fields": fields}


def test_rebalances_are_new_generations_after_the_deploy_began() -> None:
    events = [
        event(1, "rebalance_complete", generation=1),
        event(2, "rebalance_complete", generation=2),
        event(10, "rebalance_complete", generation=2),  # a static member rejoining: same one
        event(11, "rebalance_complete", generation=3),
        event(12, "rebalance_complete", thread=2, generation=3),
        event(13, "rebalance_complete", generation=4),
    ]
    assert count_rebalances(events, since=5) == (2, [3, 4])
    assert count_rebalances(events[:3], since=5) == (0, [])


def test_the_leader_is_the_last_one_elected_before_the_deploy_and_its_step_is_named() -> None:
    events = [
        {**event(1, "group_leader", pid=11, generation=1), "instance_id": "a"},
        {**event(2, "group_leader", pid=22, generation=2), "instance_id": "b"},
        {**event(20, "group_leader", pid=33, generation=3), "instance_id": "c"},  # during it
    ]
    steps = [RestartStep("a", "SIGTERM", 11), RestartStep("b", "SIGTERM", 22)]
    leader = find_leader(events, Timeline(start=10, end=30, steps=steps))
    assert leader == {
        "instance_id": "b",
        "pid": 22,
        "thread": 1,
        "generation": 2,
        "restart_step": 2,
    }
    assert find_leader(events, Timeline(start=10, end=30, steps=steps[:1]))["restart_step"] is None
    assert find_leader(events[2:], Timeline(start=10, end=30)) is None


def test_restores_count_completed_and_unfinished_ones_after_since() -> None:
    events = [
        event(1, "restore_complete", task="0_0", records=99, bytes=999, seconds=1),
        event(6, "restore_progress", task="0_0", records=10, bytes=100),
        event(7, "restore_complete", task="0_0", records=20, bytes=200, seconds=1),
        event(8, "restore_progress", pid=2, task="0_1", records=5, bytes=50),
    ]
    assert count_restores(events, since=5) == (25, 250)


def test_gap_series_measures_silence_per_partition_including_the_tail() -> None:
    records = [
        SimpleNamespace(partition=0, timestamp=ms)
        for ms in (9_000, 10_500, 11_000, 14_000)  # 10.0 .. 15.0 is the window
    ] + [SimpleNamespace(partition=1, timestamp=10_200)]
    series = gap_series(records, start=10.0, end=15.0)
    assert longest_gaps(series) == {0: 3.0, 1: 4.8}


def test_check_output_compares_final_profiles_with_clicks_sent() -> None:
    def out(user: str, clicks: int) -> SimpleNamespace:
        return SimpleNamespace(key=user.encode(), value=b'{"clicks": %d}' % clicks)

    records = [out("a", 1), out("a", 2), out("b", 3), out("c", 1)]
    result, size = check_output(records, Counter({"a": 2, "b": 2, "c": 2, "d": 1}))
    assert (result.exact, result.over, result.under, result.missing) == (1, 1, 1, 1)
    assert not result.ok
    assert size == sum(len(r.key) + len(r.value) for r in records[1:])


def test_handoff_timeline_is_each_step_end_from_the_old_stop_slowest_thread_counts() -> None:
    timeline = Timeline(start=0.0)
    timeline.steps.append(RestartStep("i1", "HANDOFF", old_pid=11, new_pid=22))
    timeline.steps.append(RestartStep("i2", "SIGTERM", old_pid=33, new_pid=44))  # not a hand-off

    def mark(ts: float, pid: int, name: str, thread: int | None = 1) -> dict:
        return event(ts, "timeline", pid=pid, thread=thread, mark=name)  # type: ignore[arg-type]

    events = [
        mark(9.9, 22, "handoff_requested", None),
        event(10.0, "handoff_stopping", pid=11),
        mark(10.01, 11, "committed"),
        mark(10.03, 11, "committed", 2),
        event(10.031, "handoff_released", pid=11),
        mark(10.05, 22, "assigned"),
        mark(10.2, 22, "stores_opened"),
        mark(10.3, 22, "first_record"),
        mark(10.25, 22, "first_record", 2),
        mark(50.0, 33, "committed"),  # another process: ignored
    ]
    [h] = handoff_timelines(events, timeline)
    assert (h["instance"], h["old_pid"], h["new_pid"]) == ("i1", 11, 22)
    ms = h["ms"]
    assert ms["requested"] == -100.0
    assert ms["committed"] == 30.0  # the slower thread
    assert ms["released"] == 31.0
    assert ms["joined"] == 50.0
    assert ms["first record"] == 300.0
    assert ms["stop noticed"] is None  # not seen
