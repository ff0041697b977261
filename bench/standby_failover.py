"""Lost-host benchmark: what losing an instance for good costs, with 0 and 1 standby replica.

    PYTHONPATH=. .venv/bin/python bench/standby_failover.py --keys 50000

Two instances x 1 thread of a counting app (``group_by_key().count()``, RocksDB) over 2
partitions. The *victim* (a ``streamrt run`` process) runs alone first and builds ``--keys``
keys of state per partition; then the *survivor* (in this process) joins and gets one task,
plus a standby of the victim's task when ``num.standby.replicas=1``. Under a steady load the
victim is SIGKILLed and removed from the group with the admin API (an operator's reaction to a
lost host); the survivor takes the victim's task over.

Measured per run: changelog records the survivor restored for the lost task, the time from
the kill to the task running again, and the longest gap between two output records of the
lost partition (the processing gap a consumer of the output sees). The baseline is
``standbys=0``; the ratio column is run / baseline. No peer is measured here (faust-streaming's
standbys are a different recovery path: its tables recover from the changelog on rebalance).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker

from streamrt.runtime import App

APP_ID = "failover"
INPUT, OUTPUT = "fo-events", "fo-counts"
SETTINGS = {
    "commit.interval.ms": "1000",
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "1000",
}


def build(settings: dict[str, str]) -> App:
    app = App({"application.id": APP_ID, **settings})
    (
        app.stream(INPUT, key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="fo-store")
        .to_stream()
        .to(OUTPUT, value_serde="int")
    )
    return app


app = build({})  # what the victim process runs (``streamrt run standby_failover:app``)


@dataclass
class Result:
    standbys: int
    restored: int
    takeover_s: float
    gap_s: float
    changelog: int


def _admin_run(bootstrap: str, coro_fn: Any) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    async def go() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return await coro_fn(admin)
        finally:
            await admin.close()

    return asyncio.run(go())


def create_topics(bootstrap: str) -> None:
    from aiokafka.admin import NewTopic

    async def go(admin: Any) -> None:
        await admin.create_topics([NewTopic(t, 2, 1) for t in (INPUT, OUTPUT)])

    _admin_run(bootstrap, go)


def committed(bootstrap: str) -> int:
    async def go(admin: Any) -> int:
        offsets = await admin.list_consumer_group_offsets(APP_ID)
        return sum(o.offset for tp, o in offsets.items() if tp.topic == INPUT and o.offset > 0)

    return int(_admin_run(bootstrap, go))


def produce(bootstrap: str, records: list[tuple[int, str]]) -> None:
    from aiokafka import AIOKafkaProducer

    async def go() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
        await p.start()
        try:
            futs = [
                await p.send(INPUT, b"x", key=k.encode(), partition=part) for part, k in records
            ]
            await asyncio.gather(*futs)
        finally:
            await p.stop()

    asyncio.run(go())


class Load(threading.Thread):
    """A steady stream of updates to both partitions, and a watch on the output's arrivals."""

    def __init__(self, bootstrap: str, rate: int, lost_partition: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.rate, self.lost = bootstrap, rate, lost_partition
        self.stop_flag = threading.Event()
        self.arrivals: list[float] = []

    def run(self) -> None:
        asyncio.run(self._go())

    async def _go(self) -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

        p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, auto_offset_reset="latest")
        await p.start()
        await c.start()
        outputs = [TopicPartition(OUTPUT, p) for p in (0, 1)]
        c.assign(outputs)
        await c.seek_to_end(*outputs)
        mine = f"live-{self.lost}-".encode()  # outputs of the lost task's input partition
        i = 0
        try:
            while not self.stop_flag.is_set():
                for part in (0, 1):
                    key = f"live-{part}-{i % 100}".encode()
                    await p.send(INPUT, b"x", key=key, partition=part)
                i += 1
                batch = await c.getmany(timeout_ms=0)
                if any(r.key.startswith(mine) for rs in batch.values() for r in rs):
                    self.arrivals.append(time.monotonic())
                await asyncio.sleep(1 / self.rate)
        finally:
            await p.stop()
            await c.stop()


def wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark step timed out: {what}")
        time.sleep(0.1)


def run_once(standbys: int, keys: int, rate: int, work: Path) -> Result:
    port = free_port()
    broker = start_broker(str(work / "broker"), port, "group.initial.rebalance.delay.ms=0")
    bootstrap = f"127.0.0.1:{port}"
    settings = {**SETTINGS, "num.standby.replicas": str(standbys), "bootstrap.servers": bootstrap}
    # The survivor joins with no state: above acceptable.recovery.lag (10,000 by default) it
    # only gets a warm-up until the probing rebalance (10 min), longer than the waits below.
    # The benchmark is about the kill, not the join: every member counts as caught up.
    settings["acceptable.recovery.lag"] = str(max(10_000, 4 * keys))
    victim: subprocess.Popen[bytes] | None = None
    survivor: App | None = None
    try:
        create_topics(bootstrap)
        produce(bootstrap, [(part, f"k{i}") for i in range(keys) for part in (0, 1)])
        cmd = [sys.executable, "-m", "streamrt.cli", "--log-level", "WARNING", "run"]
        cmd += ["standby_failover:app", "--instance-id", "victim", "--bootstrap-server", bootstrap]
        cmd += ["--state-dir", str(work / "victim")]
        for k, v in settings.items():
            if k != "bootstrap.servers":
                cmd += ["--config", f"{k}={v}"]
        here = Path(__file__).resolve()
        env = {**os.environ, "PYTHONPATH": f"{here.parents[1]}{os.pathsep}{here.parent}"}
        victim = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        wait(lambda: committed(bootstrap) == 2 * keys, 300, "the victim processed the preload")
        survivor = build(
            {**settings, "group.instance.id": "survivor", "state.dir": str(work / "survivor")}
        )
        ready_at: dict[str, float] = {}
        survivor.on_event(
            lambda e: (
                ready_at.setdefault(e["fields"]["task"], time.monotonic())
                if e["type"] == "restore_ready"
                else None
            )
        )
        survivor.start()

        def settled() -> bool:
            (meta,) = survivor.metadata_for_local_threads()
            ok = len(meta.active_tasks) == 1 and meta.state.name == "RUNNING"
            return ok and (not standbys or set(meta.standby_lags.values()) == {0})

        wait(settled, 300, "survivor running with its task (and a caught-up standby)")
        (own,) = survivor.metadata_for_local_threads()[0].active_tasks
        lost = "0_1" if own == "0_0" else "0_0"
        lost_partition = int(lost[-1])
        load = Load(bootstrap, rate, lost_partition)
        load.start()
        time.sleep(5)
        ready_at.pop(lost, None)
        restored_before = survivor.metadata_for_local_threads()[0].records_restored
        killed = time.monotonic()
        victim.send_signal(signal.SIGKILL)
        victim.wait(30)
        survivor.remove_members(["victim"])
        wait(lambda: lost in ready_at, 300, "takeover")
        time.sleep(5)
        load.stop_flag.set()
        load.join(30)
        restored = survivor.metadata_for_local_threads()[0].records_restored - restored_before
        window = [t for t in load.arrivals if t >= killed - 2]
        gaps = [b - a for a, b in pairwise(window)]
        return Result(standbys, restored, ready_at[lost] - killed, max(gaps, default=0.0), keys)
    finally:
        if survivor is not None:
            survivor.stop()
        if victim is not None and victim.poll() is None:
            victim.kill()
            victim.wait(30)
        broker.terminate()
        broker.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=50_000, help="keys of state per partition")
    ap.add_argument("--rate", type=int, default=100, help="live updates per second per partition")
    args = ap.parse_args()
    results = []
    for standbys in (0, 1):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run_once(standbys, args.keys, args.rate, Path(tmp)))
    base = results[0]
    print(f"lost host, {args.keys} keys of state per partition, {args.rate} updates/s/partition")
    print(
        "| num.standby.replicas | records restored | kill → task running (s) "
        "| longest output gap (s) | gap vs 0 standbys |"
    )
    print("|---|---|---|---|---|")
    for r in results:
        ratio = r.gap_s / base.gap_s if base.gap_s else float("nan")
        print(
            f"| {r.standbys} | {r.restored} | {r.takeover_s:.2f} | {r.gap_s:.2f} | {ratio:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
