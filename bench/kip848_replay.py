"""KIP-848 groups in ``__consumer_offsets``: what a group writes, and the time to load it.

``--groups`` groups of ``--members`` members on one 12-partition topic join and reconcile
through the pure coordinator (no broker, no I/O); then a fresh coordinator replays the
records, as the broker's load after a restart does (uncompacted: every intermediate state
is in the log), and starts the members' timers. ``--runs`` timed replays; the median and the
spread. The replayed groups are checked to equal the written ones.

``--heartbeat-members N`` also times a steady heartbeat (nothing changes, nothing written)
in one group of N reconciled members: what finding a step's records costs each heartbeat.

    PYTHONPATH=. .venv/bin/python bench/kip848_replay.py --groups 1000 --members 3 --runs 5 \
        --heartbeat-members 1000
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.requests import HeartbeatRequest
from streamrt.broker.consumer_group_config import ConsumerGroupConfig
from streamrt.broker.group.records import CoordinatorRecord
from streamrt.broker.group.timer import ManualTimer
from streamrt.clock import ManualClock

TOPICS = {"t": 12}
IDS = {"t": uuid.UUID(int=1)}


def _coordinator(clock: ManualClock) -> ConsumerGroupCoordinator:
    return ConsumerGroupCoordinator(
        ConsumerGroupConfig(), clock, ManualTimer(clock), lambda: TOPICS, lambda: IDS
    )


def _write(c: ConsumerGroupCoordinator, groups: int, members: int) -> list[CoordinatorRecord]:
    log: list[CoordinatorRecord] = []
    for g in range(groups):
        log += _write_one(c, f"g{g}", members)
    return log


def _write_one(c: ConsumerGroupCoordinator, gid: str, members: int) -> list[CoordinatorRecord]:
    log: list[CoordinatorRecord] = []
    for m in range(members):
        join = HeartbeatRequest(
            gid,
            f"m{m}",
            0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("t",),
            owned={},
        )
        log += c.heartbeat(join).records
    for _ in range(3):  # each reports what it has until all are reconciled
        for m in range(members):
            member = c.groups[gid].members[f"m{m}"]
            beat = HeartbeatRequest(
                gid, member.member_id, member.member_epoch, owned=dict(member.assigned)
            )
            log += c.heartbeat(beat).records
    return log


def _steady_heartbeat_us(members: int, runs: int) -> list[float]:
    clock = ManualClock(0)
    c = ConsumerGroupCoordinator(
        ConsumerGroupConfig(), clock, ManualTimer(clock), lambda: {"t": 2 * members}
    )
    _write_one(c, "g", members)
    group = c.groups["g"]
    beats = [HeartbeatRequest("g", m, group.members[m].member_epoch) for m in group.members]
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        for beat in beats:
            assert not c.heartbeat(beat).records
        out.append((time.perf_counter() - start) / members * 1e6)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--heartbeat-members", type=int, default=0)
    args = parser.parse_args()
    clock = ManualClock(0)
    written = _coordinator(clock)
    log = _write(written, args.groups, args.members)
    size = sum(len(r.key) + len(r.value or b"") for r in log)
    times = []
    for _ in range(args.runs):
        fresh = _coordinator(clock)
        start = time.perf_counter()
        for r in log:
            fresh.replay(r.key, r.value)
        fresh.on_loaded()
        times.append((time.perf_counter() - start) * 1000)
        same = {g: (x.group_epoch, x.members) for g, x in fresh.groups.items()} == {
            g: (x.group_epoch, x.members) for g, x in written.groups.items()
        }
        assert same, "replay did not rebuild the written groups"
    print(
        f"{args.groups} groups x {args.members} members: {len(log)} records "
        f"({len(log) / args.groups:.0f} per group), {size} bytes; load (replay + timers) "
        f"median {statistics.median(times):.0f} ms (min {min(times):.0f}, max {max(times):.0f})"
    )
    if args.heartbeat_members:
        us = _steady_heartbeat_us(args.heartbeat_members, args.runs)
        print(
            f"steady heartbeat, {args.heartbeat_members} members: median "
            f"{statistics.median(us):.0f} us (min {min(us):.0f}, max {max(us):.0f})"
        )


if __name__ == "__main__":
    main()
