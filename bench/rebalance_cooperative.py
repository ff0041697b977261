"""Cooperative vs eager rebalancing under a steady load (issue 26 item 2).

    PYTHONPATH=. .venv/bin/python bench/rebalance_cooperative.py --out /tmp/rebalance

Three instances x 2 threads (``streamrt run`` processes, static members, streamrt's own group
membership) count a steady feed over ``--partitions`` input partitions under exactly_once_v2
(RocksDB, changelog). Each output record's key carries its input partition, so the output alone
says when each partition was processed. Scenarios, each run eagerly (``upgrade.from=2.3``) and
cooperatively: (a) a 4th instance is added, (b) one is stopped and removed with
``streamrt instances remove``, (c) one is SIGKILLed and not restarted (session 6 s), (d) one
more thread on one instance at run time (``POST /v1/threads:add``, Kafka Streams'
addStreamThread).

Measured per run, from the change on: the longest processing gap of the partitions that did not
move and of those that moved (next to the longest gap before the change), changelog records
restored, generations, the time until the last assignment (balanced), and correctness from the
read_committed output: every key's counts are exactly 1..n (lost, duplicated). Prints a table,
writes ``rebalance_cooperative.json`` and a chart per run (partitions over time, gaps in red)
into ``--out``. Kafka Streams is not run here (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker

from streamrt.runtime import App

APP_ID = "rebal"
INPUT, OUTPUT = "rb-events", "rb-counts"
SETTINGS = {
    "processing.guarantee": "exactly_once_v2",
    "statestore.cache.max.bytes": "0",
    "commit.interval.ms": "100",
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "500",
    "num.stream.threads": "2",
    # moves happen at once (restoring), not after a probing rebalance 10 minutes later
    "acceptable.recovery.lag": "100000000",
    "rest.auth.token": "bench-token",  # `instances remove` is a mutating REST call
}
HERE = Path(__file__).resolve()


def build() -> App:
    app = App({"application.id": APP_ID})
    (
        app.stream(INPUT, key_serde="str", value_serde="str")
        .group_by_key()
        .count("rb-store")
        .to_stream()
        .to(OUTPUT, value_serde="int")
    )
    return app


app = build()  # what ``streamrt run rebalance_cooperative:app`` runs


@dataclass
class Result:
    scenario: str
    protocol: str
    gap_before_s: float
    gap_kept_s: float
    gap_moved_s: float
    moved: int
    restored: int
    generations: int
    balanced_s: float
    lost: int
    duplicated: int


class Instance:
    """One ``streamrt run`` process."""

    def __init__(self, name: str, bootstrap: str, work: Path, protocol: str) -> None:
        self.name, self.rest = name, free_port()
        cmd = [sys.executable, "-m", "streamrt.cli", "--log-level", "WARNING", "run"]
        cmd += ["rebalance_cooperative:app", "--instance-id", name, "--bootstrap-server"]
        cmd += [bootstrap, "--state-dir", str(work / name)]
        cmd += ["--application-server", f"127.0.0.1:{self.rest}"]
        settings = dict(SETTINGS, **({"upgrade.from": "2.3"} if protocol == "eager" else {}))
        for k, v in settings.items():
            cmd += ["--config", f"{k}={v}"]
        env = {
            **os.environ,
            "PYTHONPATH": f"{HERE.parents[1]}{os.pathsep}{HERE.parent}",
            "STREAMRT_STREAM_THREAD_MEMBERSHIP": "streamrt",
        }
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Load(threading.Thread):
    """Feeds every input partition steadily; watches the read_committed output."""

    def __init__(self, bootstrap: str, partitions: int, rate: int, keys: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.partitions, self.rate, self.keys = bootstrap, partitions, rate, keys
        self.feeding = threading.Event()
        self.stop_flag = threading.Event()
        self.sent: dict[str, int] = defaultdict(int)
        self.arrivals: dict[int, list[float]] = defaultdict(list)
        self.counts: dict[str, list[int]] = defaultdict(list)

    def run(self) -> None:
        asyncio.run(self._go())

    async def _go(self) -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

        p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, enable_idempotence=True)
        c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, isolation_level="read_committed")
        await p.start()
        await c.start()
        outs = [TopicPartition(OUTPUT, q) for q in range(self.partitions)]
        c.assign(outs)
        await c.seek_to_beginning(*outs)
        i = 0
        try:
            while not self.stop_flag.is_set():
                if self.feeding.is_set():
                    for part in range(self.partitions):
                        key = f"p{part}-k{i % self.keys}"
                        await p.send(INPUT, b"x", key=key.encode(), partition=part)
                        self.sent[key] += 1
                    i += 1
                for recs in (await c.getmany(timeout_ms=0)).values():
                    now = time.time()
                    for r in recs:
                        key = r.key.decode()
                        self.arrivals[int(key[1 : key.index("-")])].append(now)
                        self.counts[key].append(int.from_bytes(r.value, "big", signed=True))
                await asyncio.sleep(1 / self.rate)
            await p.flush()
        finally:
            await p.stop()
            await c.stop()

    def caught_up(self) -> bool:
        return all(
            len(self.counts.get(k, [])) >= n and max(self.counts[k]) >= n
            for k, n in self.sent.items()
        )


def create_topics(bootstrap: str, partitions: int) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def go() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(t, partitions, 1) for t in (INPUT, OUTPUT)])
        finally:
            await admin.close()

    asyncio.run(go())


def read_events(bootstrap: str) -> list[dict[str, Any]]:
    """Every lifecycle event the instances produced to ``<application.id>-events``."""
    from aiokafka import AIOKafkaConsumer

    async def go() -> list[dict[str, Any]]:
        c = AIOKafkaConsumer(
            f"{APP_ID}-events",
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await c.start()
        out: list[dict[str, Any]] = []
        try:
            idle = 0
            while idle < 6:
                batch = await c.getmany(timeout_ms=500)
                idle = 0 if batch else idle + 1
                out += [json.loads(r.value) for rs in batch.values() for r in rs]
        finally:
            await c.stop()
        return out

    return asyncio.run(go())


def wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark step timed out: {what}")
        time.sleep(0.2)


def longest_gap(times: list[float], start: float, end: float) -> float:
    inside = [start] + [t for t in times if start <= t <= end] + [end]
    return max((b - a for a, b in pairwise(inside)), default=0.0)


def owners(events: list[dict[str, Any]], until: float, alive: set[str]) -> dict[int, str]:
    """Partition -> owning thread, from each live thread's last assignment before ``until``."""
    last: dict[tuple[str, str], list[str]] = {}
    for e in events:
        if e["type"] == "assignment" and e["ts"] <= until and e["instance_id"] in alive:
            last[(e["instance_id"], str(e["thread"]))] = e["fields"]["tasks"]
    return {int(t.split("_")[1]): f"{inst}/{th}" for (inst, th), ts in last.items() for t in ts}


def change(
    scenario: str, instances: dict[str, Instance], bootstrap: str, work: Path, protocol: str
) -> set[str]:
    """Make the scenario's change; the instances alive afterwards."""
    if scenario == "a":
        instances["i4"] = Instance("i4", bootstrap, work, protocol)
    elif scenario == "b":
        instances["i3"].stop()
        url = f"http://127.0.0.1:{instances['i1'].rest}"
        ids = [f"--group-instance-id=i3-thread-{n}" for n in (1, 2)]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "streamrt.cli",
                "instances",
                "remove",
                "--url",
                url,
                *ids,
                "--token",
                SETTINGS["rest.auth.token"],
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(HERE.parents[1])},
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"instances remove failed: {done.stdout}{done.stderr}")
    elif scenario == "d":  # num.stream.threads raised on i1 at run time (addStreamThread)
        import httpx

        url = f"http://127.0.0.1:{instances['i1'].rest}/v1/threads:add"
        auth = {"Authorization": f"Bearer {SETTINGS['rest.auth.token']}"}
        httpx.post(url, headers=auth, timeout=30).raise_for_status()
    else:
        instances["i3"].stop(signal.SIGKILL)
    return {n for n in instances if not (scenario in "bc" and n == "i3")}


def run_once(scenario: str, protocol: str, args: argparse.Namespace, work: Path) -> Result:
    port = free_port()
    broker = start_broker(
        str(work / "broker"),
        port,
        "group.initial.rebalance.delay.ms=0",
        "group.min.session.timeout.ms=1000",
    )
    bootstrap = f"127.0.0.1:{port}"
    instances: dict[str, Instance] = {}
    load = Load(bootstrap, args.partitions, args.rate, args.keys)
    ok = False
    try:
        create_topics(bootstrap, args.partitions)
        load.start()
        for n in ("i1", "i2", "i3"):
            instances[n] = Instance(n, bootstrap, work, protocol)
        load.feeding.set()
        wait(lambda: len(load.arrivals) == args.partitions, 120, "every partition processed")
        time.sleep(args.baseline)
        t_change = time.time()
        alive = change(scenario, instances, bootstrap, work, protocol)
        time.sleep(args.settle)
        t_end = time.time()
        load.feeding.clear()
        wait(load.caught_up, 120, "the output caught up with the feed")
        ok = True
    finally:
        load.stop_flag.set()
        for inst in instances.values():
            inst.stop()
        load.join(30)
        if not ok:
            broker.terminate()
            broker.wait(30)
    try:
        events = read_events(bootstrap)
    finally:
        broker.terminate()
        broker.wait(30)
    before = owners(events, t_change, set(instances))
    after = owners(events, t_end, alive)
    moved = {p for p in range(args.partitions) if before.get(p) != after.get(p)}
    late = [e for e in events if e["ts"] >= t_change]
    gap = {p: longest_gap(load.arrivals[p], t_change, t_end) for p in range(args.partitions)}
    lost = sum(max(0, n - len(set(load.counts.get(k, [])))) for k, n in load.sent.items())
    dup = sum(
        len(v) - len(set(v)) + sum(1 for x in set(v) if x > load.sent[k])
        for k, v in load.counts.items()
    )
    result = Result(
        scenario,
        protocol,
        gap_before_s=max(
            longest_gap(load.arrivals[p], t_change - args.baseline, t_change)
            for p in range(args.partitions)
        ),
        gap_kept_s=max((gap[p] for p in gap if p not in moved), default=0.0),
        gap_moved_s=max((gap[p] for p in moved), default=0.0),
        moved=len(moved),
        restored=sum(
            int(e["fields"].get("records", 0)) for e in late if e["type"] == "restore_complete"
        ),
        generations=len(
            {e["fields"]["generation"] for e in late if e["type"] == "rebalance_complete"}
        ),
        balanced_s=max((e["ts"] for e in late if e["type"] == "assignment"), default=t_change)
        - t_change,
        lost=lost,
        duplicated=dup,
    )
    chart(result, load.arrivals, moved, t_change, t_end, args)
    return result


def chart(
    r: Result,
    arrivals: dict[int, list[float]],
    moved: set[int],
    t_change: float,
    t_end: float,
    args: argparse.Namespace,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 0.35 * args.partitions + 1.5))
    start = t_change - args.baseline
    for p in range(args.partitions):
        times = [t - t_change for t in arrivals[p] if start <= t <= t_end]
        ax.plot(times, [p] * len(times), "|", color="tab:orange" if p in moved else "tab:blue")
        inside = [start - t_change, *times, t_end - t_change]
        for a, b in pairwise(inside):
            if b - a > max(0.5, 2 * r.gap_before_s):
                ax.plot([a, b], [p, p], color="red", linewidth=3)
    ax.axvline(0, color="black", linestyle="--")
    ax.set_xlabel("seconds from the change")
    ax.set_ylabel("input partition (orange: moved)")
    ax.set_title(f"scenario {r.scenario}, {r.protocol}: gaps in red")
    fig.tight_layout()
    fig.savefig(Path(args.out) / f"rebalance_{r.scenario}_{r.protocol}.png")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="rebalance-out")
    parser.add_argument("--scenarios", default="a,b,c,d")
    parser.add_argument("--protocols", default="eager,cooperative")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=int, default=50, help="rounds per second (1 per partition)")
    parser.add_argument("--keys", type=int, default=20, help="keys per partition")
    parser.add_argument("--baseline", type=float, default=10.0, help="seconds before the change")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after the change")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    import tempfile

    results = []
    for scenario in args.scenarios.split(","):
        for protocol in args.protocols.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                results.append(run_once(scenario, protocol, args, Path(tmp)))
    print(
        "| scenario | protocol | gap before s | gap kept s | gap moved s | moved | restored "
        "| generations | balanced s | lost | duplicated |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r.scenario} | {r.protocol} | {r.gap_before_s:.2f} | {r.gap_kept_s:.2f} | "
            f"{r.gap_moved_s:.2f} | {r.moved} | {r.restored} | {r.generations} | "
            f"{r.balanced_s:.2f} | {r.lost} | {r.duplicated} |"
        )
    (Path(args.out) / "rebalance_cooperative.json").write_text(
        json.dumps([asdict(r) for r in results], indent=2)
    )
    if any(r.lost or r.duplicated for r in results):
        sys.exit("output not exact: see the lost/duplicated columns")


if __name__ == "__main__":
    main()
