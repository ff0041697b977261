"""The deploy report's tasks moved and survivors not reconciled, from the instances' events:
a static instance that gets its own tasks back moved nothing; a task that lands on another
instance moved; a survivor whose partitions changed while another instance restarted
reconciled."""

from __future__ import annotations

from typing import Any

from streamrt.deploy.rolling import RestartStep, Timeline
from streamrt.deploy.task_moves import task_moves


def _event(ts: float, pid: int, type_: str, partitions: list[int], tasks: list[str]) -> Any:
    fields = {"partitions": [["clicks", p] for p in partitions], "tasks": tasks}
    return {"ts": ts, "pid": pid, "thread": 1, "type": type_, "fields": fields}


def _timeline() -> Timeline:
    steps = [
        RestartStep("instance-1", "SIGTERM", 11, 12, stop_sent=10.0, running=12.0),
        RestartStep("instance-2", "SIGTERM", 21, 22, stop_sent=20.0, running=22.0),
    ]
    return Timeline(start=10.0, end=23.0, steps=steps)


BEFORE = [
    _event(1.0, 11, "assignment", [0, 1], ["0_0", "0_1"]),
    _event(1.0, 21, "assignment", [2, 3], ["0_2", "0_3"]),
]


def test_static_instances_getting_their_tasks_back_move_nothing() -> None:
    events = [
        *BEFORE,
        _event(11.5, 12, "assignment", [0, 1], ["0_0", "0_1"]),
        _event(21.5, 22, "assignment", [2, 3], ["0_2", "0_3"]),
    ]
    moves = task_moves(events, _timeline())
    assert (moves.moved, moves.survivors, moves.not_reconciled) == (0, 2, 2)


def test_tasks_taken_over_by_a_survivor_moved_and_it_reconciled() -> None:
    events = [
        *BEFORE,
        # instance-1 is down: instance-2 takes 0_0 (a survivor reconciling), then gives it back
        _event(10.5, 21, "assignment", [0], ["0_0", "0_2", "0_3"]),
        _event(11.8, 21, "revocation", [0], ["0_0"]),
        _event(11.9, 12, "assignment", [0, 1], ["0_0", "0_1"]),
        _event(21.5, 22, "assignment", [2, 3], ["0_2", "0_3"]),
    ]
    moves = task_moves(events, _timeline())
    # 0_0 went to instance-2 and back to instance-1; instance-2 reconciled in step 1 only
    assert (moves.moved, moves.survivors, moves.not_reconciled) == (2, 2, 1)
