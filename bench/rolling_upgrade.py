"""Rolling upgrade from the previous release: what it costs a running app (issue 37 item 2).

    .venv/bin/python bench/rolling_upgrade.py --runs 3
    .venv/bin/python bench/rolling_upgrade.py --prev /work/runs/prev --runs 3

The previous release is the last commit before the ``stream.thread.*`` keys were removed
(``git log -S stream.thread.membership -- streamrt/``: 47f9438, ``--prev-commit``). By
default its tree is extracted with ``git archive`` into the work dir and run on this
interpreter (its dependencies are a subset of this checkout's, same pins); ``--prev`` names a
checkout instead, run on its own ``.venv`` when it has one:

    git worktree add --detach /work/runs/prev 47f9438
    cd /work/runs/prev && python3 -m venv .venv && .venv/bin/pip install -e .

Per run, on a fresh embedded broker of THIS checkout (``bench/_broker.py``, metrics on): three
static instances (``--instance-id instance-N``, one state dir each) of the counting app
(``tests/runtime/counting_app.py``: a count per key, RocksDB with a changelog, every update
out: record cache off) start from the previous release, under a steady idempotent feed. Then
one at a time each is stopped with SIGTERM and started from this checkout's code with the same
instance id and state dir (``streamrt.deploy.rolling_restart``: the next one only once the
whole group is RUNNING again). After settling, the output is read back read_committed.

Contenders (``--from``): ``aiokafka``: the old group formed by the previous release's
aiokafka-membership path (``stream.thread.membership=aiokafka``: eager rebalancing, aiokafka's
consumer as the member; under exactly_once_v2 aiokafka's transactional producer);
``prev-default``: the previous release's default (streamrt's own membership, cooperative);
``current``: a plain rolling restart of this checkout (the reference for the rebalance count).
``+2.3`` after a name: two bounces, the first to this checkout with ``upgrade.from=2.3`` (eager,
as the old members), the second without it (Kafka Streams' procedure). ``-late`` at the end:
each instance stays down 3 s past a 6 s session timeout, so the group rebalances twice per
restart with old and new members mixed. Default: ``aiokafka,aiokafka-late,aiokafka+2.3-late,
current,current-late``; docs/benchmarks.md has the figures.

Reported: records lost (per key, inputs minus its final count: must be 0), duplicates (counts
emitted twice or beyond the inputs: 0 under exactly-once), missing intermediate counts,
rebalances (the broker's completed join phases of the group, ``streamrt_group_rebalances_total``,
and the new generations the threads reported), records restored during the upgrade, the
longest gap between two output records of a partition, the deploy time. Before the deploy the
old config (with ``stream.thread.membership``) is started once on this checkout's code: it must
fail at start-up naming the key, without touching the group. Exit code 1 if any record was lost
(or duplicated under exactly-once), or that check did not hold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._broker import free_port, start_broker
from streamrt.admin.client import AdminClient
from streamrt.deploy import EventTail, InstanceSpec, LocalInstance, rolling_restart
from streamrt.deploy.kafka_io import coordinator_rebalances, create_topics, group_lag
from streamrt.deploy.report import count_rebalances, count_restores, gap_series, longest_gaps
from streamrt.deploy.rolling import Timeline, wait_all_running
from streamrt.deploy.scenario import BROKER_OVERRIDES
from tests.runtime.eos_support import exactness, read_committed

ROOT = Path(__file__).resolve().parents[1]
APP_ID, INPUT, OUTPUT = "counting", "events", "event-counts-out"
TARGET = "tests.runtime.counting_app:app"
OLD_KEY = "stream.thread.membership"
BASES = ("aiokafka", "prev-default", "current")
#: the previous release: the last commit on main before the stream.thread.* keys were removed
PREV_COMMIT = "47f94382c10639e943961ee5827349da248ffdb1"
TWO_BOUNCES = "+2.3"  # in a name: bounce with upgrade.from=2.3 first, then without it
LATE_SESSION_TIMEOUT_MS = 6_000  # "-late": each instance stays down 3 s longer than this
GUARANTEES = ("at_least_once", "exactly_once_v2")


class Feed(threading.Thread):
    """``rate`` records/s over ``keys`` keys from an idempotent producer; ``acked`` counts
    per key what the broker acknowledged (a send that failed is not counted)."""

    def __init__(self, bootstrap: str, keys: int, rate: float) -> None:
        super().__init__(daemon=True, name="feed")
        self.bootstrap, self.keys, self.rate = bootstrap, keys, rate
        self.acked: Counter[str] = Counter()
        self.failed = 0
        self._halt = threading.Event()

    def run(self) -> None:
        asyncio.run(self._go())

    async def _go(self) -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True, linger_ms=5
        )
        await producer.start()
        began, sent = time.monotonic(), 0
        try:
            while not self._halt.is_set():
                due = int((time.monotonic() - began) * self.rate) - sent
                batch = []
                for _ in range(max(due, 0)):
                    key = f"k{sent % self.keys}"
                    batch.append((key, await producer.send(INPUT, b"e", key=key.encode())))
                    sent += 1
                for key, future in batch:
                    try:
                        await future
                        self.acked[key] += 1
                    except Exception:  # counted: the record is not an input
                        self.failed += 1
                await asyncio.sleep(0.02)
        finally:
            await producer.stop()

    def stop(self) -> None:
        self._halt.set()
        if self.ident is not None:  # started
            self.join(60)


class UpgradedOnRestart(LocalInstance):
    """Start ``k`` runs ``specs[k]`` (the last one from then on): the old release first, then
    each bounce's config."""

    def __init__(self, specs: list[InstanceSpec]) -> None:
        super().__init__(specs[0])
        self.specs = specs

    @property
    def new(self) -> InstanceSpec:
        return self.specs[-1]

    def start(self) -> int:
        self.spec = self.specs[min(self.starts, len(self.specs) - 1)]
        return super().start()


def session_timeout_ms(args: argparse.Namespace, contender: str) -> int:
    return LATE_SESSION_TIMEOUT_MS if contender.endswith("-late") else args.session_timeout_ms


def down_seconds(args: argparse.Namespace, contender: str) -> float:
    """How long each instance stays down: past the session timeout for "-late" (the group
    rebalances without it, then again when it is back: two rebalances of a mixed group)."""
    return LATE_SESSION_TIMEOUT_MS / 1000 + 3 if contender.endswith("-late") else 0.0


def settings(args: argparse.Namespace, contender: str, guarantee: str) -> dict[str, str]:
    commit_ms = 100 if guarantee == "exactly_once_v2" else 1000
    session_ms = session_timeout_ms(args, contender)
    return {
        "processing.guarantee": guarantee,
        "commit.interval.ms": str(commit_ms),
        "session.timeout.ms": str(session_ms),
        "heartbeat.interval.ms": str(max(session_ms // 10, 100)),
        "statestore.cache.max.bytes": "0",  # every update out: each count is checkable
    }


def base_of(contender: str) -> str:
    return contender.removesuffix("-late").removesuffix(TWO_BOUNCES)


def specs(
    args: argparse.Namespace, contender: str, guarantee: str, work: Path, bootstrap: str, n: int
) -> list[InstanceSpec]:
    """Instance ``n``'s spec per start: the old release, then the new code (with
    ``upgrade.from=2.3`` first for a two-bounce contender); same id and state dir."""
    new = InstanceSpec(
        name=f"instance-{n}",
        target=TARGET,
        bootstrap=bootstrap,
        state_dir=work / f"state-{n}",
        threads=args.threads,
        instance_id=f"instance-{n}",
        log_path=work / "logs" / f"instance-{n}.new.log",
        settings=settings(args, contender, guarantee),
        cwd=ROOT,
    )
    base = base_of(contender)
    if TWO_BOUNCES in contender:
        bridge = {**new.settings, "upgrade.from": "2.3"}
        steps = [InstanceSpec(**{**_fields(new), "settings": bridge}), new]
    else:
        steps = [new]
    if base == "current":
        return [new, *steps]
    old_settings = dict(new.settings)
    if base == "aiokafka":
        old_settings[OLD_KEY] = "aiokafka"
    shape = InstanceSpec(**{**_fields(new), "settings": old_settings})
    argv = [str(args.prev_python), *shape.command()[1:]]  # the previous release's interpreter
    old = InstanceSpec(
        **{
            **_fields(shape),
            "cwd": args.prev,
            "argv": tuple(argv),
            "log_path": work / "logs" / f"instance-{n}.old.log",
        }
    )
    return [old, *steps]


def extract(commit: str, into: Path) -> Path:
    """The tree of ``commit`` of this repository in ``into`` (``git archive``: no worktree,
    nothing left in .git)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=False
    )
    if archive.returncode:
        raise SystemExit(f"cannot extract {commit}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _fields(spec: InstanceSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in spec.__dataclass_fields__}


def old_key_check(spec: InstanceSpec, work: Path) -> dict[str, Any]:
    """This checkout's code started with the old config (``stream.thread.membership`` still
    set; instance id ``config-check``, its own state dir): it must exit at once, naming it."""
    cmd = InstanceSpec(
        **{
            **_fields(spec),
            "instance_id": "config-check",
            "state_dir": work / "state-config-check",
            "settings": {**spec.settings, OLD_KEY: "aiokafka"},
        }
    ).command()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    except subprocess.TimeoutExpired:
        return {"exit_code": None, "message": "still running after 120 s", "seconds": 120.0}
    lines = [line for line in done.stderr.splitlines() if "no longer exists" in line]
    return {
        "exit_code": done.returncode,
        "message": lines[-1].strip() if lines else done.stderr.strip()[-300:],
        "seconds": round(time.monotonic() - began, 2),
    }


def members(bootstrap: str) -> list[tuple[str | None, str]]:
    """(group.instance.id, client.id) of every member of the group, from DescribeGroups."""

    async def go() -> list[tuple[str | None, str]]:
        async with AdminClient(bootstrap) as admin:
            found = await admin.describe_groups([APP_ID])
        return sorted(
            ((m.group_instance_id, m.client_id) for m in found[APP_ID].members),
            key=lambda m: str(m[0]),
        )

    return asyncio.run(go())


def wait_output(bootstrap: str, want: Counter[str], timeout: float) -> list[Any]:
    """The committed output once every key's last count reached its inputs (or at timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        records = read_committed(bootstrap, OUTPUT)
        last = {r.key.decode(): int.from_bytes(r.value, "big", signed=True) for r in records}
        if all(last.get(k, 0) >= n for k, n in want.items()) or time.monotonic() > deadline:
            return records
        time.sleep(2)


def verdict(records: list[Any], want: Counter[str]) -> dict[str, int]:
    updates: dict[str, list[int]] = {}
    for r in records:
        updates.setdefault(r.key.decode(), []).append(int.from_bytes(r.value, "big", signed=True))
    duplicates, missing = exactness(updates, dict(want))
    last = {k: v[-1] for k, v in updates.items()}
    return {
        "inputs": sum(want.values()),
        "outputs": len(records),
        "lost": sum(max(n - last.get(k, 0), 0) for k, n in want.items()),
        "keys_short": sum(1 for k, n in want.items() if last.get(k, 0) < n),
        "duplicates": duplicates,
        "missing_intermediate": missing,
    }


def run_once(
    args: argparse.Namespace, contender: str, guarantee: str, work: Path
) -> dict[str, Any]:
    port, metrics_port = free_port(), free_port()
    overrides = [f"{k}={v}" for k, v in BROKER_OVERRIDES.items()]
    broker = start_broker(str(work / "broker"), port, *overrides, metrics_port=metrics_port)
    bootstrap, metrics = f"127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}/metrics"
    instances: list[UpgradedOnRestart] = []
    feed = Feed(bootstrap, args.keys, args.rate)
    say = print if args.verbose else (lambda *_a: None)
    try:
        create_topics(
            bootstrap,
            {
                INPUT: (args.partitions, {}),
                OUTPUT: (args.partitions, {"message.timestamp.type": "LogAppendTime"}),
            },
        )
        with EventTail(bootstrap, APP_ID) as tail:
            for n in range(1, args.instances + 1):
                instances.append(
                    UpgradedOnRestart(specs(args, contender, guarantee, work, bootstrap, n))
                )
            feed.start()
            for instance in instances:
                instance.start()
            wait_all_running(tail, instances, args.threads, args.timeout)
            before_members = members(bootstrap)
            time.sleep(args.baseline_seconds)
            rebalances_0 = coordinator_rebalances(metrics, APP_ID) or 0
            check = old_key_check(instances[0].new, work)
            rebalances_1 = coordinator_rebalances(metrics, APP_ID) or 0
            check["group_rebalanced"] = rebalances_1 != rebalances_0
            say(f"  old config on the new code: {check}")
            bounces = [
                rolling_restart(
                    tail,
                    instances,
                    threads=args.threads,
                    restart_delay=down_seconds(args, contender),
                    stop_signal=signal.SIGTERM,
                    ready_timeout=args.timeout,
                    on_step=say,
                )
                for _ in range(len(instances[0].specs) - 1)
            ]
            steps = [step for bounce in bounces for step in bounce.steps]
            timeline = Timeline(bounces[0].start, bounces[-1].end, steps)
            time.sleep(args.after_seconds)
            rebalances_2 = coordinator_rebalances(metrics, APP_ID) or 0
            after_members = members(bootstrap)
            feed.stop()
            deadline = time.monotonic() + args.timeout
            while (
                group_lag(bootstrap, APP_ID, INPUT, args.partitions) and time.monotonic() < deadline
            ):
                time.sleep(1)
            records = wait_output(bootstrap, feed.acked, 60)
            events = tail.events()
        for instance in instances:
            instance.stop()
        generations, new_generations = count_rebalances(events, timeline.start)
        restored, restored_bytes = count_restores(events, timeline.start)
        gaps = longest_gaps(gap_series(records, timeline.start, timeline.end))
        base = longest_gaps(
            gap_series(records, timeline.start - args.baseline_seconds + 0.5, timeline.start)
        )
        return {
            "from": contender,
            "guarantee": guarantee,
            **verdict(records, feed.acked),
            "feed_failed": feed.failed,
            "rebalances": rebalances_2 - rebalances_1,
            "rebalances_forming": rebalances_0,  # the old release's instances forming the group
            "thread_generations": generations,
            "generations_seen": new_generations,
            "restored_records": restored,
            "restored_bytes": restored_bytes,
            "longest_gap_s": max(gaps.values(), default=0.0),
            "gap_before_s": max(base.values(), default=0.0),
            "deploy_s": round(timeline.duration, 2),
            "downtime_s": [round(s.downtime, 2) for s in timeline.steps],
            "exit_codes": [s.exit_code for s in timeline.steps],
            "members_before": before_members,
            "members_after": after_members,
            "old_key_check": check,
        }
    finally:  # the children first: a failure here must not leave them running
        try:
            for instance in instances:
                instance.stop(signal.SIGKILL)
            feed.stop()
        finally:
            broker.terminate()
            broker.wait(30)


def failures(r: dict[str, Any]) -> list[str]:
    """What makes a run fail: lost records, duplicates under exactly-once, a bad old-key check."""
    out = []
    if r["lost"] or r["keys_short"]:
        out.append(f"{r['lost']} records lost ({r['keys_short']} keys short)")
    if r["guarantee"] == "exactly_once_v2" and (r["duplicates"] or r["missing_intermediate"]):
        out.append(f"{r['duplicates']} duplicates, {r['missing_intermediate']} missing counts")
    check = r["old_key_check"]
    refused = check["exit_code"] not in (0, None) and OLD_KEY in check["message"]
    if not refused or check["group_rebalanced"]:
        out.append(f"the old key was not refused cleanly: {check}")
    return out


def _median(values: list[float]) -> str:
    mid = statistics.median(values)
    text = f"{mid:g}" if float(mid).is_integer() else f"{mid:.2f}"
    return text if min(values) == max(values) else f"{text} ({min(values):g}-{max(values):g})"


def table(results: list[dict[str, Any]]) -> list[str]:
    """Medians (min-max) per (from, guarantee)."""
    head = "| from | guarantee | runs | lost | duplicates | rebalances (broker) | generations "
    head += "(threads) | records restored | longest gap s | gap before s | deploy s |"
    lines = [head, "|" + "---|" * 11]
    for contender in dict.fromkeys(r["from"] for r in results):
        for guarantee in GUARANTEES:
            rs = [r for r in results if r["from"] == contender and r["guarantee"] == guarantee]
            if not rs:
                continue
            cols = [
                "lost",
                "duplicates",
                "rebalances",
                "thread_generations",
                "restored_records",
                "longest_gap_s",
                "gap_before_s",
                "deploy_s",
            ]
            cells = " | ".join(_median([float(r[c]) for r in rs]) for c in cols)
            lines.append(f"| {contender} | {guarantee} | {len(rs)} | {cells} |")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--prev", type=Path, help="a checkout of the previous release")
    p.add_argument("--prev-commit", default=PREV_COMMIT, help="else this commit, git archive'd")
    p.add_argument("--prev-python", type=Path, help="default: <prev>/.venv/bin/python if any")
    p.add_argument(
        "--from",
        dest="contenders",
        default="aiokafka,aiokafka-late,aiokafka+2.3-late,current,current-late",
        help=f"comma list of {', '.join(BASES)}, each with +2.3 (two bounces) and/or -late",
    )
    p.add_argument("--guarantees", default=",".join(GUARANTEES))
    p.add_argument("--runs", type=int, default=1, help="runs per (from, guarantee)")
    p.add_argument("--instances", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--keys", type=int, default=120)
    p.add_argument("--rate", type=float, default=200.0, help="input records/s")
    p.add_argument("--session-timeout-ms", type=int, default=30_000)
    p.add_argument("--baseline-seconds", type=float, default=3.0)
    p.add_argument("--after-seconds", type=float, default=3.0)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/streamrt-bench-upgrade"))
    p.add_argument("--json", type=Path, help="write every run's result here")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    work = args.work_dir / str(int(time.time()))
    contenders = args.contenders.split(",")
    if bad := [c for c in contenders if base_of(c) not in BASES]:
        raise SystemExit(f"--from: unknown {bad}; one of {', '.join(BASES)}, +2.3, -late")
    args.prev = (args.prev or extract(args.prev_commit, work / "prev")).resolve()
    venv = args.prev / ".venv" / "bin" / "python"
    args.prev_python = args.prev_python or (venv if venv.exists() else Path(sys.executable))
    git = ["git", "-C", str(args.prev), "rev-parse", "--short", "HEAD"]
    found = subprocess.run(git, capture_output=True, text=True).stdout.strip()
    prev_commit = found if args.prev != work / "prev" else args.prev_commit[:7]
    print(f"previous release: {args.prev} at {prev_commit} on {args.prev_python}", flush=True)
    results: list[dict[str, Any]] = []
    bad_runs: list[str] = []
    for run in range(1, args.runs + 1):
        for contender in contenders:
            for guarantee in args.guarantees.split(","):
                name = f"{contender}-{guarantee}-{run}"
                r = run_once(args, contender, guarantee, work / name)
                r["prev_commit"] = prev_commit
                results.append(r)
                print(json.dumps(r), flush=True)
                bad_runs += [f"{name}: {f}" for f in failures(r)]
                if args.json:
                    args.json.write_text(json.dumps(results, indent=1))
    print("\n".join(table(results)))
    for line in bad_runs:
        print(f"FAILED {line}")
    return 1 if bad_runs else 0


if __name__ == "__main__":
    sys.exit(main())
