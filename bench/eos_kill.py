"""Exactly-once under SIGKILL, and what exactly-once costs.

Against a broker subprocess, with the counting app (``tests/runtime/counting_app.py``: count
per key, changelogged RocksDB store, counts out):

1. **kills**: a feeder produces events all along; the app runs as a subprocess with
   ``processing.guarantee=exactly_once_v2`` (static member, one state dir) and is SIGKILLed
   mid-stream ``--kills`` times, restarted each time. At the end the committed output
   (read_committed) is checked: every key's counts must be exactly 1..n (0 duplicates,
   0 missing). Records restored per restart come from the ``restore_complete`` events.
   The same run with at-least-once is the baseline (its duplicates).
2. **throughput**: ``--events`` events pre-produced, the app started in this process and timed
   until every count is out, for at-least-once and exactly_once_v2 at commit.interval.ms 100
   and 1000; ratios EOS / at-least-once from the same run. (No peer row: Quix Streams' and
   faust's exactly-once are not set up in bench/_peers_*.py.)

    .venv/bin/python bench/eos_kill.py --kills 20 --events 20000
    .venv/bin/python bench/eos_kill.py --producer librdkafka ...   # its transactional producer

``--producer librdkafka`` is the runtime's one data path since issue 37 (kept so older
commands run; ``aiokafka`` is refused). ``--cache-off`` times the throughput rows with the
record cache off (with it, 64 keys absorb almost every update and the producer sends little).
Throughput rows also give records per CPU-second of the app: every thread of this process but
the main one, which only polls for completion (Linux /proc).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._broker import free_port, start_broker
from tests.kafka_helpers import create_topic, produce, read_all, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.eos_support import (
    count_updates,
    exactness,
    read_committed,
    run_counting_process,
)

KEYS = 64
# The record cache off: every update is emitted, so each key's counts must be exactly 1..n.
SESSION = {
    "session.timeout.ms": "8000",
    "heartbeat.interval.ms": "500",
    "statestore.cache.max.bytes": "0",
}


def events(n: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % KEYS}".encode(), b"e") for i in range(start, start + n)]


def expected(n: int) -> dict[str, int]:
    return dict(Counter(f"k{i % KEYS}" for i in range(n)))


def every_key_reached(bootstrap: str, want: dict[str, int]) -> bool:
    """Each key's latest count reached its input count (under at-least-once over-counted keys
    go past it: a sum over keys reached the total while other keys still had input to count,
    and the drain stopped the app before it had, which looked like lost input)."""
    updates = count_updates(bootstrap)
    return all(updates.get(key, [0])[-1] >= n for key, n in want.items())


def latest_total(bootstrap: str) -> int:
    return sum(v[-1] for v in count_updates(bootstrap).values())


class Feeder:
    def __init__(self, bootstrap: str, batch: int = 50, pause: float = 0.05) -> None:
        self.bootstrap, self.batch, self.pause, self.sent = bootstrap, batch, pause, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            produce(self.bootstrap, "events", events(self.batch, start=self.sent))
            self.sent += self.batch
            self._stop.wait(self.pause)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def topics(bootstrap: str) -> None:
    create_topic(bootstrap, "events", 4)
    create_topic(bootstrap, "event-counts-out", 4)


def data_path(producer: str | None) -> dict[str, str]:
    """``--producer``: librdkafka's is the only one since issue 37 (the stream.thread.* keys
    are gone); aiokafka's is refused."""
    if producer == "aiokafka":
        raise SystemExit("--producer aiokafka: aiokafka's data path was removed (issue 37)")
    return {}


@contextlib.contextmanager
def kill_broker(kind: str, root: Path) -> Iterator[str]:
    """The kill runs' broker: the embedded one, or Apache Kafka 4.3.1 (one KRaft node, its
    group.min.session.timeout.ms lowered as the embedded one's)."""
    if kind == "apache":
        from streamrt.dev.apache_kafka import ApacheKafka

        extra = {"group.min.session.timeout.ms": "1000"}
        with ApacheKafka(1, work_dir=root / "apache-kafka", overrides=extra) as kafka:
            yield kafka.bootstrap
        return
    port = free_port()
    broker = start_broker(str(root / "broker"), port, "group.min.session.timeout.ms=1000")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        broker.terminate()
        broker.wait(30)


def kill_run(
    root: Path, kills: int, guarantee: str, path: dict[str, str], kafka: str = "embedded"
) -> dict[str, object]:
    with kill_broker(kafka, root) as bootstrap:
        return _kill_run(bootstrap, root, kills, guarantee, path)


def _kill_run(
    bootstrap: str, root: Path, kills: int, guarantee: str, path: dict[str, str]
) -> dict[str, object]:
    topics(bootstrap)
    settings = {
        **SESSION,
        **path,
        "processing.guarantee": guarantee,
        "commit.interval.ms": "100",
    }
    state = root / "state"
    feeder = Feeder(bootstrap)
    feeder.start()
    kill_times = []
    for _ in range(kills):
        proc = run_counting_process(bootstrap, state, "k", settings)
        try:
            done = latest_total(bootstrap)
            wait_until(lambda d=done: latest_total(bootstrap) >= d + 200, timeout=120)  # type: ignore[misc]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            kill_times.append(time.time())
    feeder.stop()
    total = feeder.sent
    proc = run_counting_process(bootstrap, state, "k", settings)
    try:
        want = expected(total)
        with contextlib.suppress(AssertionError, TimeoutError):  # short keys are reported below
            wait_until(lambda: every_key_reached(bootstrap, want), timeout=180, what="drain")
        time.sleep(1.0)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    reader = read_committed if guarantee != "at_least_once" else None
    updates = count_updates(bootstrap)
    want = expected(total)
    duplicates, missing = exactness(updates, want)
    # at-least-once may skip an intermediate count (a crash after the changelog write,
    # before the output) and over-count, but never lose input: each key's last count >= n
    finals = {key: max(updates.get(key, [0])) for key in want}
    short = sorted(key for key, n in want.items() if finals[key] < n)
    restored = []
    for r in read_all(bootstrap, "counting-events"):
        event = json.loads(r.value)
        if event["type"] == "restore_complete":
            restored.append(event["fields"]["records"])
    changelog = len((reader or read_all)(bootstrap, "counting-event-counts-changelog"))
    return {
        "guarantee": guarantee,
        "kills": kills,
        "events": total,
        "duplicates": duplicates,
        "missing": missing,
        "final_short_keys": len(short),
        "final_over_counted": sum(max(0, finals[k] - n) for k, n in want.items()),
        "restarts_with_restore": len(restored),
        "restored_per_restart_max": max(restored, default=0),
        "restored_total": sum(restored),
        "changelog_records": changelog,
    }


def app_cpu_s() -> float:
    """CPU seconds of this process's threads but the main one (the app's stream thread, its
    clients' threads, librdkafka's included; the main thread only polls for completion)."""
    main = threading.main_thread().native_id
    total = 0
    for task in os.listdir("/proc/self/task"):
        if int(task) == main:
            continue
        try:
            stat = Path(f"/proc/self/task/{task}/stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def committed_input(bootstrap: str) -> int:
    """Sum of the app group's committed input offsets (cheap to poll, unlike the output)."""
    import asyncio

    from streamrt.admin.client import AdminClient

    async def go() -> int:
        async with AdminClient(bootstrap) as admin:
            offsets = await admin.fetch_committed_offsets("counting")
        return sum(o.offset for (topic, _), o in offsets.items() if topic == "events")

    return asyncio.run(go())


def throughput(
    root: Path, n: int, guarantee: str, commit_ms: int, path: dict[str, str]
) -> tuple[float, float]:
    """(records per second, records per CPU-second of the app) until all are committed."""
    port = free_port()
    broker = start_broker(str(root / f"broker-{guarantee}-{commit_ms}"), port)
    bootstrap = f"127.0.0.1:{port}"
    try:
        topics(bootstrap)
        for start in range(0, n, 5000):
            produce(bootstrap, "events", events(min(5000, n - start), start))
        app = make_app(
            {
                "bootstrap.servers": bootstrap,
                "state.dir": str(root / f"state-{guarantee}-{commit_ms}"),
                "processing.guarantee": guarantee,
                "commit.interval.ms": str(commit_ms),
                **path,
            }
        )
        began, cpu = time.perf_counter(), app_cpu_s()
        app.start()
        try:
            wait_until(lambda: committed_input(bootstrap) >= n, timeout=600, interval=0.2)
            return n / (time.perf_counter() - began), n / (app_cpu_s() - cpu)
        finally:
            app.stop()
    finally:
        broker.terminate()
        broker.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--skip-baseline-kills", action="store_true")
    parser.add_argument(
        "--kill-runs",
        default="exactly_once_v2,at_least_once",
        help="which guarantees' kill runs (comma-separated)",
    )
    parser.add_argument("--no-throughput", action="store_true", help="only the kill runs")
    parser.add_argument(
        "--kafka",
        choices=("embedded", "apache"),
        default="embedded",
        help="the kill runs' broker (apache: Apache Kafka 4.3.1, one node; throughput rows stay "
        "on the embedded one)",
    )
    parser.add_argument("--producer", choices=("aiokafka", "librdkafka"), default=None)
    parser.add_argument(
        "--cache-off",
        action="store_true",
        help="throughput with statestore.cache.max.bytes=0: every update is produced twice "
        "(changelog and output), so the producer's share of the work shows",
    )
    args = parser.parse_args()
    path = data_path(args.producer)
    tput_path = {**path, "statestore.cache.max.bytes": "0"} if args.cache_off else path
    root = Path(tempfile.mkdtemp(prefix="eos-bench-"))
    try:
        print(f"== SIGKILL x{args.kills} mid-stream, commit.interval.ms=100, {path or 'defaults'}")
        wanted = args.kill_runs.split(",")
        if args.skip_baseline_kills:
            wanted = [g for g in wanted if g != "at_least_once"]
        for guarantee in wanted:
            row = kill_run(root / guarantee, args.kills, guarantee, path, args.kafka)
            print(json.dumps({"broker": args.kafka, **row}), flush=True)
        if args.no_throughput:
            return
        print(f"== throughput, {args.events} events, counting app, 1 thread, 4 partitions")
        rows = {}
        for guarantee, commit_ms in (
            ("at_least_once", 100),
            ("at_least_once", 1000),
            ("exactly_once_v2", 100),
            ("exactly_once_v2", 1000),
        ):
            rate, per_cpu = throughput(root, args.events, guarantee, commit_ms, tput_path)
            rows[(guarantee, commit_ms)] = rate
            print(
                f"{guarantee:16} commit.interval.ms={commit_ms:5}: {rate:8.0f} rec/s"
                f" {per_cpu:8.0f} rec/CPU-s"
            )
        for commit_ms in (100, 1000):
            ratio = rows[("exactly_once_v2", commit_ms)] / rows[("at_least_once", commit_ms)]
            print(f"EOS / at-least-once at commit.interval.ms={commit_ms}: {ratio:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
