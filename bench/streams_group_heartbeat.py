"""Time the streams-group coordinator (pure, no sockets) and count what a bounce moves.

A group of ``members`` members (one process each) runs one subtopology of ``tasks`` tasks. For
each size it times a steady heartbeat (nothing changes: the cost every member pays every
``group.streams.heartbeat.interval.ms``), then bounces one member twice: as a static member
(leave with epoch -2, rejoin under a new member id) and as a dynamic one (leave with -1, join
anew), the others heartbeating until stable while it is down and after it is back. For each
bounce it reports the group-epoch bumps and how many *other* members had their tasks changed.
Prints medians and ranges over ``--runs``.

    .venv/bin/python bench/streams_group_heartbeat.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from streamrt.broker.group.timer import ManualTimer
from streamrt.broker.streams_group.coordinator import StreamsGroupCoordinator
from streamrt.broker.streams_group.member import Tasks
from streamrt.broker.streams_group.requests import StreamsHeartbeatRequest
from streamrt.broker.streams_group.topology import StreamsTopology, Subtopology
from streamrt.broker.streams_group_config import StreamsGroupConfig
from streamrt.clock import ManualClock

SIZES = ((10, 64), (100, 256), (500, 1000))
GROUP = "bench"


class Group:
    def __init__(self, members: int, tasks: int) -> None:
        self.coordinator = StreamsGroupCoordinator(
            StreamsGroupConfig(), ManualTimer(ManualClock(0)), lambda: {"in": tasks}
        )
        self.topology = StreamsTopology(0, (Subtopology("0", source_topics=("in",)),))
        self.held: dict[str, Tasks] = {}
        for i in range(members):
            self.join(f"m{i}", f"i{i}")
        self.settle()

    def join(self, member_id: str, instance: str) -> None:
        answer = self.coordinator.heartbeat(
            StreamsHeartbeatRequest(
                GROUP,
                member_id,
                0,
                instance_id=instance,
                rebalance_timeout_ms=30_000,
                topology=self.topology,
                owned=Tasks(),
                process_id=f"p-{instance}",
            )
        )
        self.held[member_id] = answer.tasks or Tasks()

    def beat(self, member_id: str) -> bool:
        """One heartbeat reporting what the member runs; True if its tasks changed."""
        epoch = self.coordinator.groups[GROUP].members[member_id].member_epoch
        answer = self.coordinator.heartbeat(
            StreamsHeartbeatRequest(GROUP, member_id, epoch, owned=self.held[member_id])
        )
        if answer.tasks is not None and not answer.tasks.same(self.held[member_id]):
            self.held[member_id] = answer.tasks
            return True
        return False

    def settle(self, skip: str = "") -> set[str]:
        """Heartbeat everyone until stable; the members (but ``skip``) whose tasks changed."""
        changed: set[str] = set()
        for _ in range(20):
            for m in list(self.coordinator.groups[GROUP].members):
                if m in self.held and self.beat(m) and m != skip:  # not one that is down
                    changed.add(m)
            group = self.coordinator.groups[GROUP]
            up = [m for m in group.members.values() if m.member_id in self.held]
            if all(m.is_reconciled_to(group.assignment_epoch) for m in up):
                break
        return changed


def bounce(g: Group, static: bool) -> tuple[int, int]:
    """(group-epoch bumps, other members reconciled) of bouncing member m0."""
    group = g.coordinator.groups[GROUP]
    before = group.group_epoch
    member = group.members["m0"]
    g.coordinator.heartbeat(
        StreamsHeartbeatRequest(GROUP, "m0", -2 if static else -1, instance_id="i0")
    )
    g.held.pop("m0")
    changed = g.settle()  # the others heartbeat while it is down
    if static:
        g.join("m0-new", "i0")
    else:
        g.coordinator.groups[GROUP].static_members.pop("i0", None)
        g.join("m0-new", "j0")
    changed |= g.settle(skip="m0-new")
    assert member is not None
    return group.group_epoch - before, len(changed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for members, tasks in SIZES:
        steady: list[float] = []
        results: dict[bool, list[tuple[int, int]]] = {True: [], False: []}
        for _ in range(args.runs):
            g = Group(members, tasks)
            n = 200
            start = time.perf_counter()
            for i in range(n):
                g.beat(f"m{i % members}")
            steady.append((time.perf_counter() - start) / n * 1e6)
            for static in (True, False):
                results[static].append(bounce(Group(members, tasks), static))
        print(
            f"{members} members, {tasks} tasks: steady heartbeat median "
            f"{statistics.median(steady):.0f} us (range {min(steady):.0f}-{max(steady):.0f})"
        )
        for static, label in ((True, "static (-2, rejoin)"), (False, "dynamic (-1, join)")):
            bumps = sorted({b for b, _ in results[static]})
            moved = sorted({m for _, m in results[static]})
            print(f"  {label}: epoch bumps {bumps}, other members reconciled {moved}")


if __name__ == "__main__":
    main()
