"""What bench/rebalance_cooperative.py measures in one run, its table and its chart.

Everything is measured the same way for every contender: gaps from when the harness's
read_committed consumer received each input partition's output (its own clock, not record
timestamps), moves and the balanced time from the ``assignment`` lifecycle events, restored
records from ``restore_complete`` and generations from ``rebalance_complete`` (streamrt
publishes them itself; the Kafka Streams peer publishes the same events, Lifecycle.java).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

HEADER = (
    "| scenario | protocol | contender | gap before s | gap kept s | gap moved s | moved "
    "| restored | generations | balanced s | uncommitted: before / kept s | lost | duplicated |"
)


@dataclass
class Result:
    scenario: str
    protocol: str
    contender: str
    broker: str
    gap_before_s: float
    gap_kept_s: float
    gap_moved_s: float
    moved: int
    restored: int
    generations: int
    balanced_s: float
    lost: int
    duplicated: int
    # the same gaps in the output read_uncommitted: processing, before commits make it visible
    uncommitted_gap_before_s: float = 0.0
    uncommitted_gap_kept_s: float = 0.0

    @property
    def exact(self) -> bool:
        return not (self.lost or self.duplicated)

    def row(self) -> str:
        """A table row; a run whose output is not exact shows no figure but the error."""
        head = f"| {self.scenario} | {self.protocol} | {self.contender} |"
        if not self.exact:
            return head + " — |" * 8 + f" {self.lost} | {self.duplicated} |"
        return (
            f"{head} {self.gap_before_s:.2f} | {self.gap_kept_s:.2f} | "
            f"{self.gap_moved_s:.2f} | {self.moved} | {self.restored} | {self.generations} | "
            f"{self.balanced_s:.2f} | {self.uncommitted_gap_before_s:.2f} / "
            f"{self.uncommitted_gap_kept_s:.2f} | {self.lost} | {self.duplicated} |"
        )


@dataclass
class Observed:
    """One run's raw material: the feed, the output, the lifecycle events and the clock."""

    partitions: int
    sent: dict[str, int]
    arrivals: dict[int, list[float]]
    counts: dict[str, list[int]]
    events: list[dict[str, Any]]
    t_change: float
    t_end: float
    baseline: float
    before: set[str]  # instances alive before the change
    after: set[str] = field(default_factory=set)
    produced: dict[int, list[float]] = field(default_factory=dict)  # read_uncommitted arrivals
    held: dict[str, int] | None = None  # records per key in the input topic (None: not read)


def longest_gap(times: list[float], start: float, end: float) -> float:
    inside = [start] + [t for t in times if start <= t <= end] + [end]
    return max((b - a for a, b in pairwise(inside)), default=0.0)


def placement(events: list[dict[str, Any]], until: float, alive: set[str]) -> dict[str, list[int]]:
    """Thread (``instance/thread``) -> its partitions, from each live thread's last
    ``assignment`` before ``until``."""
    last: dict[str, list[str]] = {}
    for e in events:
        if e["type"] == "assignment" and e["ts"] <= until and e["instance_id"] in alive:
            last[f"{e['instance_id']}/{e['thread']}"] = e["fields"]["tasks"]
    return {thread: [int(t.split("_")[1]) for t in tasks] for thread, tasks in last.items()}


def owners(events: list[dict[str, Any]], until: float, alive: set[str]) -> dict[int, str]:
    """Partition -> owning thread."""
    return {p: th for th, ps in placement(events, until, alive).items() for p in ps}


def placed(events: list[dict[str, Any]], alive: set[str], partitions: int, now: float) -> bool:
    """Every partition owned by exactly one live thread."""
    owned = sorted(p for ps in placement(events, now, alive).values() for p in ps)
    return owned == list(range(partitions))


def correctness(o: Observed) -> tuple[int, int]:
    """(lost, duplicated) from the read_committed output: every key's counts are 1..n."""
    lost = sum(max(0, n - len(set(o.counts.get(k, [])))) for k, n in o.sent.items())
    dup = sum(
        len(v) - len(set(v)) + sum(1 for x in set(v) if x > o.sent[k]) for k, v in o.counts.items()
    )
    return lost, dup


def measure(scenario: str, protocol: str, contender: str, broker: str, o: Observed) -> Result:
    before = owners(o.events, o.t_change, o.before)
    after = owners(o.events, o.t_end, o.after)
    moved = moved_partitions(o, before, after)
    late = [e for e in o.events if e["ts"] >= o.t_change]
    gap = {p: longest_gap(o.arrivals[p], o.t_change, o.t_end) for p in range(o.partitions)}
    start = o.t_change - o.baseline
    kept = [p for p in gap if p not in moved]
    lost, dup = correctness(o)
    return Result(
        scenario,
        protocol,
        contender,
        broker,
        gap_before_s=max(longest_gap(o.arrivals[p], start, o.t_change) for p in gap),
        gap_kept_s=max((gap[p] for p in kept), default=0.0),
        gap_moved_s=max((gap[p] for p in moved), default=0.0),
        moved=len(moved),
        restored=sum(
            int(e["fields"].get("records", 0)) for e in late if e["type"] == "restore_complete"
        ),
        generations=len(
            {e["fields"]["generation"] for e in late if e["type"] == "rebalance_complete"}
        ),
        balanced_s=max((e["ts"] for e in late if e["type"] == "assignment"), default=o.t_change)
        - o.t_change,
        lost=lost,
        duplicated=dup,
        uncommitted_gap_before_s=max(
            longest_gap(o.produced.get(p, []), start, o.t_change) for p in gap
        ),
        uncommitted_gap_kept_s=max(
            (longest_gap(o.produced.get(p, []), o.t_change, o.t_end) for p in kept), default=0.0
        ),
    )


def moved_partitions(o: Observed, before: dict[int, str], after: dict[int, str]) -> set[int]:
    return {p for p in range(o.partitions) if before.get(p) != after.get(p)}


def chart(r: Result, o: Observed, out: Path) -> Path:
    """Partitions over time from ``baseline`` s before the change: a tick per output batch
    (moved partitions orange), gaps longer than max(0.5 s, 2x the gap before) in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    moved = moved_partitions(
        o, owners(o.events, o.t_change, o.before), owners(o.events, o.t_end, o.after)
    )
    fig, ax = plt.subplots(figsize=(10, 0.35 * o.partitions + 1.5))
    start = o.t_change - o.baseline
    for p in range(o.partitions):
        times = [t - o.t_change for t in o.arrivals[p] if start <= t <= o.t_end]
        ax.plot(times, [p] * len(times), "|", color="tab:orange" if p in moved else "tab:blue")
        inside = [-o.baseline, *times, o.t_end - o.t_change]
        for a, b in pairwise(inside):
            if b - a > max(0.5, 2 * r.gap_before_s):
                ax.plot([a, b], [p, p], color="red", linewidth=3)
    ax.axvline(0, color="black", linestyle="--")
    ax.set_xlabel("seconds from the change")
    ax.set_ylabel("input partition (orange: moved)")
    verdict = "" if r.exact else f" — OUTPUT WRONG: {r.lost} lost, {r.duplicated} duplicated"
    ax.set_title(
        f"{r.contender} on {r.broker}, scenario {r.scenario}, {r.protocol}: gaps in red{verdict}"
    )
    fig.tight_layout()
    path = out / f"rebalance_{r.scenario}_{r.protocol}_{r.contender}.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


QUIET_TYPES = frozenset({"commit", "restore_progress", "timeline"})


def explain(o: Observed, keys: int = 6, events: int = 80) -> str:
    """Why a run was not exact, for the log: the first wrong keys' count sequences (each as
    runs ``a..b``) and the lifecycle events from the baseline on, relative to the change.
    A CI run that fails here leaves nothing else behind."""

    def runs(values: list[int]) -> str:
        out: list[str] = []
        for v in values:
            if out and out[-1].split("..")[-1] == str(v - 1):
                out[-1] = f"{out[-1].split('..')[0]}..{v}"
            else:
                out.append(str(v))
        return " ".join(out)

    wrong = [
        k for k, n in sorted(o.sent.items()) if sorted(o.counts.get(k, [])) != list(range(1, n + 1))
    ]
    start = o.t_change - o.baseline
    shown = [e for e in o.events if e["type"] not in QUIET_TYPES and e["ts"] >= start]
    lines = [f"events from the baseline on ({len(shown)}, the first {events}):"]
    for e in shown[:events]:
        who = e.get("thread_id") or e.get("instance_id")
        lines.append(f"  {e['ts'] - o.t_change:+8.3f}s {who} {e['type']} {e.get('fields', {})}")
    lines.append(f"{len(wrong)} wrong key(s); the first {min(keys, len(wrong))}:")
    held = o.held
    lines += [
        f"  {k}: sent {o.sent[k]}"
        + (f", the input holds {held.get(k, 0)}" if held is not None else "")
        + f", counts {runs(o.counts.get(k, []))}"
        for k in wrong[:keys]
    ]
    return "\n".join(lines)
