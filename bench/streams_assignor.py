"""Time the KIP-1071 sticky task assignor (pure, no broker) on groups of growing size.

For each size: a fresh assignment (no member reports tasks) and a sticky one (every member
reports the previous result, one member replaced by a newcomer on a new process). Half the
subtopologies are stateful; ``--standbys`` standby replicas. Prints the median and the range of
``--runs`` timings per case, in milliseconds. The coordinator calls the assignor synchronously,
so this is time its heartbeat handling is blocked.

    .venv/bin/python bench/streams_assignor.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping

from streamrt.broker.streams_group.task_assignor import (
    AssignmentMemberSpec,
    GroupSpec,
    assign,
)

# (members, processes, subtopologies, partitions each)
SIZES = ((10, 5, 4, 16), (100, 20, 10, 64), (500, 100, 20, 100), (1000, 200, 20, 250))


class _Topology:
    def __init__(self, subtopologies: int, partitions: int) -> None:
        self.tasks = {f"s{i}": partitions for i in range(subtopologies)}

    def subtopologies(self) -> list[str]:
        return list(self.tasks)

    def max_num_input_partitions(self, subtopology_id: str) -> int:
        return self.tasks[subtopology_id]

    def is_stateful(self, subtopology_id: str) -> bool:
        return int(subtopology_id[1:]) % 2 == 0


def _time(members: Mapping[str, AssignmentMemberSpec], standbys: int, topo: _Topology) -> float:
    start = time.perf_counter()
    assign(GroupSpec(members, standbys), topo)
    return (time.perf_counter() - start) * 1000


def _sticky_input(
    fresh: Mapping[str, AssignmentMemberSpec], standbys: int, topo: _Topology
) -> dict[str, AssignmentMemberSpec]:
    first = assign(GroupSpec(fresh, standbys), topo)
    spec = {
        m: AssignmentMemberSpec(
            process_id=fresh[m].process_id, active_tasks=a.active, standby_tasks=a.standby
        )
        for m, a in first.members.items()
    }
    spec.pop("m0")
    spec["newcomer"] = AssignmentMemberSpec(process_id="p-new")
    return spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--standbys", type=int, default=1)
    args = parser.parse_args()
    for members, processes, subs, parts in SIZES:
        topo = _Topology(subs, parts)
        fresh = {
            f"m{i}": AssignmentMemberSpec(process_id=f"p{i % processes}") for i in range(members)
        }
        sticky = _sticky_input(fresh, args.standbys, topo)
        line = f"members={members} processes={processes} tasks={subs * parts}:"
        for name, spec in (("fresh", fresh), ("sticky", sticky)):
            runs = [_time(spec, args.standbys, topo) for _ in range(args.runs)]
            line += f" {name} {statistics.median(runs):.1f} ms ({min(runs):.1f}-{max(runs):.1f})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
