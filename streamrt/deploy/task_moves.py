"""Which tasks changed instance during a deploy, and which survivors had to reconcile.

Both come from the runtime's own events, so they mean the same under either group protocol
(``classic`` or ``streams``): a rebalance count does not (a classic generation is a join
phase; a streams-group epoch bumps without stopping anyone), so the report shows these too.

- tasks moved: each ``assignment`` event names every task its thread now holds; a task moved
  when, after the deploy began, it is assigned to another *instance* than held it last (a
  static instance that gets its own tasks back moved nothing);
- survivors not reconciled: per restart step, each instance not being restarted is a
  survivor; it reconciled when one of its threads was told to give up or take tasks
  (``revocation``, ``partitions_lost``, or an ``assignment`` adding partitions) between the
  step's stop signal and the restarted instance's threads being RUNNING.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streamrt.deploy.rolling import Timeline

__all__ = ("TaskMoves", "task_moves")

_RECONCILE = ("revocation", "partitions_lost", "assignment")


@dataclass(frozen=True, slots=True)
class TaskMoves:
    """``moved``: task changes of instance; ``survivors``: survivor-steps;
    ``not_reconciled``: of those, how many saw no change of their tasks."""

    moved: int
    survivors: int
    not_reconciled: int


def task_moves(events: Iterable[dict[str, Any]], timeline: Timeline) -> TaskMoves:
    """Count both over the deploy ``timeline`` from the events the instances published."""
    events = sorted(events, key=lambda e: e["ts"])
    instance_of: dict[Any, str] = {}
    for step in timeline.steps:
        for pid in (step.old_pid, step.new_pid):
            if pid is not None:
                instance_of[pid] = step.instance
    owner: dict[str, str] = {}
    moved = 0
    for e in events:
        who = instance_of.get(e["pid"])
        if e["type"] != "assignment" or who is None:
            continue
        for task in e["fields"].get("tasks") or ():
            before = owner.get(str(task))
            if e["ts"] >= timeline.start and before is not None and before != who:
                moved += 1
            owner[str(task)] = who
    survivors = not_reconciled = 0
    everyone = set(instance_of.values())
    for step in timeline.steps:
        end = step.running or timeline.end
        busy = {
            instance_of[e["pid"]]
            for e in events
            if e["pid"] in instance_of and step.stop_sent <= e["ts"] <= end and _reconciles(e)
        }
        others = everyone - {step.instance}
        survivors += len(others)
        not_reconciled += len(others - busy)
    return TaskMoves(moved, survivors, not_reconciled)


def _reconciles(event: dict[str, Any]) -> bool:
    """A thread gave up or took partitions (an empty change is a no-op round)."""
    return event["type"] in _RECONCILE and bool(event["fields"].get("partitions"))
