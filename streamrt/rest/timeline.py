"""The console's timeline: rebalances, restarts and member removals, read from lifecycle events.

The same raw material as the deploy report (``docs/events.md``, "Deriving a deploy report"):
a rebalance is a new ``rebalance_complete.generation`` (a static member rejoining into the
same generation is not one); a restart is a new ``pid`` for an instance id; what moved comes
from ``assignment`` events (a partition whose owning ``thread_id`` changed); restored records
from ``restore_complete``; the processing gap around an entry from ``commit`` events (per input
partition, the time between the last commit before the entry and the first one after it; the
longest over partitions). Pure functions: the REST layer feeds them what it followed.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ("summarize",)

Event = dict[str, Any]


@dataclass(slots=True)
class _Scan:
    """What one pass over the events found, in order."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    max_generation: int = -1
    current: dict[str, Any] | None = None  # the latest rebalance entry
    owner: dict[str, str] = field(default_factory=dict)  # "topic-p" -> thread_id
    pid_of: dict[str, int] = field(default_factory=dict)  # instance_id -> newest pid
    seen_pids: set[int] = field(default_factory=set)
    restarts: dict[int, dict[str, Any]] = field(default_factory=dict)  # new pid -> entry
    handoff_pids: set[int] = field(default_factory=set)
    marks: dict[str, list[float]] = field(default_factory=dict)  # "topic-p" -> commit times


def _on_rebalance(scan: _Scan, e: Event) -> None:
    generation = e["fields"].get("generation")
    if generation is None:
        return
    generation = int(generation)
    if generation > scan.max_generation:
        scan.max_generation = generation
        scan.current = {
            "type": "rebalance",
            "ts": e["ts"],
            "generation": generation,
            "members": [],
            "moved": [],
        }
        scan.entries.append(scan.current)
    if scan.current is not None and generation == scan.current["generation"]:
        member = e.get("thread_id") or e.get("instance_id")
        if member and member not in scan.current["members"]:
            scan.current["members"].append(member)


def _on_assignment(scan: _Scan, e: Event) -> None:
    thread_id = e.get("thread_id") or f"{e.get('instance_id')}-thread-{e.get('thread')}"
    for topic, partition in e["fields"].get("partitions") or ():
        key = f"{topic}-{partition}"
        before = scan.owner.get(key)
        if before is not None and before != thread_id and scan.current is not None:
            scan.current["moved"].append({"partition": key, "from": before, "to": thread_id})
        scan.owner[key] = thread_id


def _on_any(scan: _Scan, e: Event) -> None:
    """A new pid for a known instance id is a restart (the old process's last events, which
    come after the successor's first ones in a hand-off, are not)."""
    instance, pid = e.get("instance_id") or "", e.get("pid")
    if not instance or pid is None or pid in scan.seen_pids:
        return
    scan.seen_pids.add(pid)
    previous = scan.pid_of.get(instance)
    scan.pid_of[instance] = pid
    if previous is None:
        return
    entry = {
        "type": "restart",
        "ts": e["ts"],
        "instance_id": instance,
        "old_pid": previous,
        "new_pid": pid,
        "handoff": previous in scan.handoff_pids,
        "ready_s": None,
        "restored_records": 0,
    }
    scan.restarts[pid] = entry
    scan.entries.append(entry)


def _on_new_pid_event(scan: _Scan, e: Event) -> None:
    entry = scan.restarts.get(e.get("pid", -1))
    if entry is None:
        return
    if e["type"] == "restore_complete":
        entry["restored_records"] += int(e["fields"].get("records") or 0)
    elif e["type"] == "app_state" and e["fields"].get("new") == "RUNNING" and not entry["ready_s"]:
        entry["ready_s"] = round(e["ts"] - entry["ts"], 3)


def _on_commit(scan: _Scan, e: Event) -> None:
    for key in e["fields"].get("offsets") or {}:
        scan.marks.setdefault(key, []).append(float(e["ts"]))


def _scan(events: Iterable[Event]) -> _Scan:
    scan = _Scan()
    for e in events:
        kind = e.get("type")
        _on_any(scan, e)
        if kind == "rebalance_complete":
            _on_rebalance(scan, e)
        elif kind == "assignment":
            _on_assignment(scan, e)
        elif kind == "commit":
            _on_commit(scan, e)
        elif kind == "handoff_stopping":
            scan.handoff_pids.add(e["pid"])
        elif kind in ("member_removed", "fenced", "fatal_error", "thread_failed"):
            scan.entries.append(
                {
                    "type": kind,
                    "ts": e["ts"],
                    "instance_id": e.get("instance_id"),
                    "thread_id": e.get("thread_id"),
                    "fields": e["fields"],
                }
            )
        _on_new_pid_event(scan, e)
    return scan


def _gap_around(marks: dict[str, list[float]], ts: float) -> dict[str, Any] | None:
    """The longest time between the last commit at or before ``ts`` and the next one."""
    best: dict[str, Any] | None = None
    for key, times in marks.items():
        i = bisect.bisect_right(times, ts)
        if i == 0 or i == len(times):
            continue
        gap = times[i] - times[i - 1]
        if best is None or gap > best["seconds"]:
            best = {"partition": key, "seconds": round(gap, 3)}
    return best


def summarize(events: Iterable[Event], limit: int = 30) -> list[dict[str, Any]]:
    """The newest ``limit`` timeline entries, newest first, each with its processing gap."""
    scan = _scan(events)
    previous: list[str] = []
    for entry in scan.entries:
        if entry["type"] != "rebalance":
            continue
        members = sorted(entry["members"])
        entry["members"] = members
        entry["joined"] = sorted(set(members) - set(previous)) if previous else []
        entry["left"] = sorted(set(previous) - set(members))
        previous = members
    for entry in scan.entries:
        if entry["type"] in ("rebalance", "restart"):
            entry["gap"] = _gap_around(scan.marks, entry["ts"])
    return sorted(scan.entries, key=lambda x: x["ts"], reverse=True)[:limit]
