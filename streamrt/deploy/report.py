"""The deploy report: what the rolling restart cost, from events and the app's output.

- rebalances: new group generations seen in ``rebalance_complete`` events after the deploy
  began (the coordinator's count, not the members' callbacks: a static member rejoining
  into the same generation is not a rebalance);
- restored records/bytes: ``restore_complete`` (and unfinished ``restore_progress``) events;
- processing gap (:func:`processing_gaps`, the one definition, which the Spark report shares):
  per partition, the longest time between two marks of progress, here the output topic's
  LogAppendTime timestamps while the load generator kept producing;
- correctness: each user's final profile click count against the clicks sent;
- the group leader's instance: the newest ``group_leader`` event before the deploy, and the
  restart step that stopped that process;
- tasks moved and survivors not reconciled (:mod:`streamrt.deploy.task_moves`);
- the coordinator's own count of completed rebalances (the broker's
  ``streamrt_group_rebalances`` metric), a cross-check that needs no client's word;
- per hand-off, its timeline (:func:`handoff_timelines`): when each step ended, from the old
  process's ``handoff_stopping`` and both processes' ``timeline`` marks.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from streamrt.deploy.rolling import Timeline

__all__ = (
    "Correctness",
    "DeployReport",
    "PartitionGap",
    "check_output",
    "commit_marks",
    "count_rebalances",
    "count_restores",
    "find_leader",
    "gap_series",
    "handoff_timelines",
    "longest_gaps",
    "processing_gaps",
)

Mark = tuple[str, int, float]  # (topic, partition, time in epoch seconds): progress was made


@dataclass(slots=True)
class Correctness:
    users: int = 0
    exact: int = 0
    over: int = 0  # counted twice: re-processing after an unclean stop (at-least-once)
    under: int = 0  # a click lost: a bug
    missing: int = 0  # no profile at all

    @property
    def ok(self) -> bool:
        return self.under == 0 and self.missing == 0

    @property
    def exactly_once_result(self) -> bool:
        return self.ok and self.over == 0


@dataclass(slots=True)
class DeployReport:
    contender: str
    settings: dict[str, Any]
    rebalances: int
    generations: list[int]
    restored_records: int
    restored_bytes: int
    longest_gap_s: float
    baseline_gap_s: float
    gap_by_partition: dict[int, float]
    records_in: int
    records_out: int
    state_bytes: int
    correctness: Correctness
    timeline: Timeline
    gap_points: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    leader: dict[str, Any] | None = None  # instance_id, pid, generation, restart_step (1-based)
    coordinator_rebalances: int | None = None
    handoffs: list[dict[str, Any]] = field(default_factory=list)  # see handoff_timelines
    # see deploy.task_moves: tasks that changed instance; survivor-steps, and of those the
    # ones whose tasks did not change while another instance restarted
    tasks_moved: int = 0
    survivors: int = 0
    survivors_not_reconciled: int = 0

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__slots__ if k not in ("timeline", "correctness")}
        out["timeline"] = self.timeline.to_json()
        out["correctness"] = {**asdict(self.correctness), "ok": self.correctness.ok}
        out["gap_points"] = {str(p): pts for p, pts in self.gap_points.items()}
        plain: dict[str, Any] = json.loads(json.dumps(out, default=str))
        return plain

    def lines(self) -> list[str]:
        c = self.correctness
        steps = self.timeline.steps
        return [
            f"contender                 {self.contender}",
            f"rebalances during deploy  {self.rebalances}  (generations {self.generations}; "
            f"the coordinator counted {_or_unknown(self.coordinator_rebalances)})",
            f"group leader              {self._leader_line()}",
            f"tasks moved               {self.tasks_moved} (to another instance)",
            f"survivors not reconciled  {self.survivors_not_reconciled} of {self.survivors} "
            "(instances whose tasks did not change while another one restarted)",
            f"records restored          {self.restored_records}",
            f"bytes restored            {self.restored_bytes:,}",
            f"longest processing gap    {self.longest_gap_s:.2f}s on one partition "
            f"(before the deploy: {self.baseline_gap_s:.2f}s)",
            "instance downtime         "
            + ", ".join(f"{s.instance} {s.downtime:.1f}s" for s in steps),
            f"records processed         {self.records_out} outputs for {self.records_in} inputs "
            f"({self.records_out - self.records_in:+d})",
            f"state size                ~{self.state_bytes / 1e6:.1f} MB",
            f"correctness               {'OK' if c.ok else 'WRONG'}: {c.exact}/{c.users} users "
            f"exact, {c.over} over-counted, {c.under} under-counted, {c.missing} missing",
            *[f"note                      {n}" for n in self.notes],
            *[
                f"hand-off {n}                {_handoff_line(h)}"
                for n, h in enumerate(self.handoffs, 1)
            ],
        ]

    @property
    def leader_restart_step(self) -> int | None:
        """Which restart (1-based) stopped the leader's process; None: unknown or not restarted."""
        return None if self.leader is None else self.leader.get("restart_step")

    def _leader_line(self) -> str:
        if self.settings.get("group_protocol") == "streams":
            return "none: the broker assigns a streams group's tasks"
        if self.leader is None:
            return "unknown (no group_leader event before the deploy)"
        who = self.leader["instance_id"] or "a dynamic member"
        line = f"{who} (pid {self.leader['pid']}, generation {self.leader['generation']})"
        step = self.leader_restart_step
        if step is None:
            return line + "; its process was not restarted"
        return line + f"; restarted in step {step} of {len(self.timeline.steps)}"


# (label, process, event type, timeline mark): the steps of a hand-off, in their usual order.
# The slowest thread counts (a partition waits for its own thread).
HANDOFF_STEPS: tuple[tuple[str, str, str, str | None], ...] = (
    ("requested", "new", "timeline", "handoff_requested"),
    ("stop noticed", "old", "timeline", "stop_noticed"),
    ("committed", "old", "timeline", "committed"),
    ("released", "old", "handoff_released", None),
    ("joined", "new", "timeline", "assigned"),
    ("old stores closed", "old", "timeline", "stores_closed"),
    ("stores opened", "new", "timeline", "stores_opened"),
    ("ready", "new", "timeline", "ready"),
    ("first fetch", "new", "timeline", "first_fetch"),
    ("first record", "new", "timeline", "first_record"),
)


def handoff_timelines(events: Iterable[dict[str, Any]], timeline: Timeline) -> list[dict[str, Any]]:
    """Per hand-off step of the deploy: milliseconds from the old process's
    ``handoff_stopping`` to the end of each step (:data:`HANDOFF_STEPS`; None: not seen)."""
    events = list(events)
    out: list[dict[str, Any]] = []
    for step in timeline.steps:
        if step.signal != "HANDOFF" or step.old_pid is None or step.new_pid is None:
            continue
        pids = {"old": step.old_pid, "new": step.new_pid}
        stopping = [
            e["ts"] for e in events if e["pid"] == step.old_pid and e["type"] == "handoff_stopping"
        ]
        if not stopping:
            continue
        t0 = stopping[0]
        marks: dict[str, float | None] = {}
        for label, who, type_, mark in HANDOFF_STEPS:
            times = [
                e["ts"]
                for e in events
                if e["pid"] == pids[who]
                and e["type"] == type_
                and (mark is None or e["fields"].get("mark") == mark)
            ]
            marks[label] = round((max(times) - t0) * 1000, 1) if times else None
        out.append(
            {
                "instance": step.instance,
                "old_pid": step.old_pid,
                "new_pid": step.new_pid,
                "ms": marks,
            }
        )
    return out


def _handoff_line(h: dict[str, Any]) -> str:
    return (
        f"{h['instance']}: "
        + ", ".join(
            f"{label} {'?' if ms is None else f'{ms:+.0f}'}" for label, ms in h["ms"].items()
        )
        + " ms"
    )


def _or_unknown(value: int | None) -> str:
    return "?" if value is None else str(value)


def find_leader(events: Iterable[dict[str, Any]], timeline: Timeline) -> dict[str, Any] | None:
    """The instance whose thread last computed an assignment before the deploy began."""
    leader: dict[str, Any] | None = None
    for e in events:
        if e["type"] == "group_leader" and e["ts"] < timeline.start:
            leader = {
                "instance_id": e.get("instance_id") or "",
                "pid": e["pid"],
                "thread": e.get("thread"),
                "generation": e["fields"].get("generation"),
            }
    if leader is not None:
        steps = [n for n, s in enumerate(timeline.steps, 1) if s.old_pid == leader["pid"]]
        leader["restart_step"] = steps[0] if steps else None
    return leader


def count_rebalances(events: Iterable[dict[str, Any]], since: float) -> tuple[int, list[int]]:
    """New generations after ``since`` relative to the newest one before it."""
    base = 0
    after: set[int] = set()
    for e in events:
        if e["type"] != "rebalance_complete" or e["fields"].get("generation") is None:
            continue
        generation = int(e["fields"]["generation"])
        if e["ts"] < since:
            base = max(base, generation)
        else:
            after.add(generation)
    new = sorted(g for g in after if g > base)
    return len(new), new


def count_restores(events: Iterable[dict[str, Any]], since: float) -> tuple[int, int]:
    """(records, bytes) restored after ``since``; an unfinished restore counts its progress."""
    records = size = 0
    in_flight: dict[tuple[Any, Any, str], tuple[int, int]] = {}
    for e in events:
        if e["ts"] < since or e["type"] not in ("restore_progress", "restore_complete"):
            continue
        f = e["fields"]
        key = (e["pid"], e["thread"], f["task"])
        if e["type"] == "restore_progress":
            in_flight[key] = (f["records"], f["bytes"])
        else:
            in_flight.pop(key, None)
            records += f["records"]
            size += f["bytes"]
    return records + sum(r for r, _ in in_flight.values()), size + sum(
        b for _, b in in_flight.values()
    )


@dataclass(frozen=True, slots=True)
class PartitionGap:
    """The longest processing gap of one partition: ``gap_end_ts - gap_start_ts`` seconds."""

    topic: str
    partition: int
    longest_gap_s: float
    gap_start_ts: float
    gap_end_ts: float


def _series(
    marks: Iterable[Mark], start: float, end: float
) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """Per (topic, partition), (end time, length) of every gap that ends in ``[start, end]``.

    The definition of a processing gap: the time between two consecutive progress marks of a
    partition, taken in the order the marks were recorded. A gap that began before ``start``
    counts whole (it ended in the window); with no mark before ``start`` the first gap begins
    at ``start``; marks after ``end`` are ignored; and the silence from a partition's last
    mark to ``end`` is a gap too (a partition that stopped making progress).
    """
    last: dict[tuple[str, int], float] = {}
    out: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for topic, partition, t in marks:
        key = (topic, partition)
        if t < start:
            last[key] = t
            continue
        if t > end:
            continue
        prev = last.get(key, start)
        out.setdefault(key, []).append((t, t - prev))
        last[key] = t
    for key, t in last.items():
        out.setdefault(key, []).append((end, end - t))
    return out


def processing_gaps(marks: Iterable[Mark], start: float, end: float) -> list[PartitionGap]:
    """The longest gap per partition (see :func:`_series`), sorted by topic and partition;
    among equal gaps, the first one."""
    gaps = []
    for (topic, partition), points in sorted(_series(marks, start, end).items()):
        gap_end, gap = max(points, key=lambda point: point[1])
        gaps.append(PartitionGap(topic, partition, gap, gap_end - gap, gap_end))
    return gaps


def commit_marks(events: Iterable[dict[str, Any]]) -> Iterator[Mark]:
    """Progress marks from ``commit`` events: each commit that advanced a partition's offset
    (the first commit seen of a partition counts as an advance)."""
    committed: dict[str, int] = {}
    for e in events:
        if e["type"] != "commit":
            continue
        for topic_partition, offset in (e["fields"].get("offsets") or {}).items():
            previous = committed.get(topic_partition)
            if previous is None or offset > previous:
                topic, _, partition = topic_partition.rpartition("-")
                yield topic, int(partition), float(e["ts"])
            committed[topic_partition] = offset


def gap_series(
    records: Iterable[Any], start: float, end: float
) -> dict[int, list[tuple[float, float]]]:
    """Per output partition, (time, gap) with output records (LogAppendTime) as the marks."""
    marks = ((getattr(r, "topic", ""), r.partition, r.timestamp / 1000) for r in records)
    return {partition: points for (_, partition), points in _series(marks, start, end).items()}


def longest_gaps(series: dict[int, list[tuple[float, float]]]) -> dict[int, float]:
    return {p: round(max((g for _, g in pts), default=0.0), 3) for p, pts in series.items()}


def check_output(records: Iterable[Any], sent: Counter[str]) -> tuple[Correctness, int]:
    """Compare each user's latest profile with the clicks sent; also returns the state size."""
    latest: dict[bytes, bytes] = {}
    for r in records:
        latest[r.key] = r.value
    result = Correctness(users=len(sent))
    for user, count in sent.items():
        raw = latest.get(user.encode())
        if raw is None:
            result.missing += 1
            continue
        clicks = json.loads(raw)["clicks"]
        if clicks == count:
            result.exact += 1
        elif clicks > count:
            result.over += 1
        else:
            result.under += 1
    state_bytes = sum(len(k) + len(v) for k, v in latest.items())
    return result, state_bytes
