"""Heavy-state app throughput per stream thread, and the full-restore rate.

Runs ``apps/sessions.py`` (a ~2.3 KB profile per user in RocksDB, changelogged) with one
stream thread against a broker subprocess:

1. baseline: a plain aiokafka consumer reads the same clicks and ``json.loads`` each one,
   in this process (the floor any Python consumer pays);
2. the app processes every click: records/s per thread, ratio to the baseline;
3. the state dir is deleted and the app restarted: it restores every profile from the
   changelog; records/s and MB/s of the restore;
4. the restore's own baselines: a bare fetch of the same changelog topic from the beginning
   to its end (no decode, nothing written), the floor a restore pays, with aiokafka and with
   librdkafka (confluent-kafka, the default data path's restore consumer). The restore is
   compared with both: like with like is the fetch of the client the restore used.

    .venv/bin/python bench/runtime_sessions.py --users 20000 --clicks 100000

``--profile-restore FILE`` records a py-spy profile (raw collapsed stacks, ``--idle``) of this
process while the restore runs (summarise with ``bench/_profile_top.py``). ``--json FILE`` also
writes the figures as JSON (``bench/check_headlines.py`` reads it).

``BENCH_SLOW_RESTORE_MS=N`` sleeps N ms per 100 restored records (at least N per batch) before
each batch is written (a monkeypatch
in this harness, never in the runtime): the deliberate slowdown with which
``tests/bench/test_check_headlines.py`` shows that the headline check flags a slower restore.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _broker import free_port, start_broker


def produce(bootstrap: str, users: int, clicks: int) -> None:
    from aiokafka import AIOKafkaProducer

    async def go() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10, max_batch_size=262144)
        await p.start()
        for i in range(clicks):
            user = f"u{i % users:07d}"
            value = json.dumps({"user": user, "page": f"/p/{i % 97}", "ts": i}).encode()
            await p.send("clicks", value, key=user.encode())
        await p.flush()
        await p.stop()

    asyncio.run(go())


def baseline(bootstrap: str, clicks: int) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> float:
        # earliest, not only seek_to_beginning: assign() starts a reset to the default
        # (latest) that can land after the seek and leave a partition at its end
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await c.start()
        tps = [TopicPartition("clicks", p) for p in range(2)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        t0 = time.perf_counter()
        n = 0
        while n < clicks:
            for msgs in (await c.getmany(timeout_ms=1000, max_records=10000)).values():
                for m in msgs:
                    json.loads(m.value)
                n += len(msgs)
        elapsed = time.perf_counter() - t0
        await c.stop()
        return clicks / elapsed

    return asyncio.run(go())


def bare_fetch(bootstrap: str, topic: str, partitions: int) -> tuple[int, float]:
    """Read ``topic`` from its beginning to its end with aiokafka; (records, records/s)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> tuple[int, float]:
        # earliest, not only seek_to_beginning: assign() starts a reset to the default
        # (latest) that can land after the seek and leave a partition at its end
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await c.start()
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        ends = await c.end_offsets(tps)
        await c.seek_to_beginning(*tps)
        t0 = time.perf_counter()
        n = 0

        async def behind() -> bool:
            return any([await c.position(tp) < ends[tp] for tp in tps])

        while await behind():
            for msgs in (await c.getmany(timeout_ms=1000, max_records=5000)).values():
                n += len(msgs)
        elapsed = time.perf_counter() - t0
        await c.stop()
        if n != sum(ends.values()):  # a partial fetch would make the ratio a lie
            raise RuntimeError(f"bare fetch of {topic} read {n} of {sum(ends.values())}")
        return n, n / elapsed

    return asyncio.run(go())


def bare_fetch_librdkafka(bootstrap: str, topic: str, partitions: int) -> tuple[int, float]:
    """Read ``topic`` from its beginning to its end with librdkafka, taking each message's key,
    value and timestamp as a restore does; (records, records/s)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bare-fetch",
            "enable.auto.commit": False,
            # the restore consumer's fetch sizes (client_settings.RESTORE_CONSUMER_DEFAULTS),
            # written out so that a run of an older tree's restore meets the same floor: 1 MiB
            # per partition also fetches faster than the 16 MiB of before (the first record in
            # ~5 ms instead of ~0.2 s; docs/bench/history.md, "Full restore: the fetch's size")
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 1024 * 1024,
        }
    )
    try:
        # explicit start offsets (as the restore consumer's): OFFSET_BEGINNING on a fresh
        # consumer waits ~0.5 s for librdkafka's offset-query retry
        marks = [c.get_watermark_offsets(TopicPartition(topic, p), 10) for p in range(partitions)]
        ends = sum(high - low for low, high in marks)
        c.assign([TopicPartition(topic, p, low) for p, (low, _high) in enumerate(marks)])
        t0 = time.perf_counter()
        n = 0
        while n < ends:  # a changelog with no transactions: one record per offset
            for m in c.consume(50_000, 0.001):
                if m.error() is None:
                    m.key(), m.value(), m.timestamp()
                    n += 1
        elapsed = time.perf_counter() - t0
    finally:
        c.close()
    if n != ends:
        raise RuntimeError(f"bare librdkafka fetch of {topic} read {n} of {ends}")
    return n, n / elapsed


def start_spy(out: str) -> subprocess.Popen[bytes]:
    spy = Path(sys.executable).with_name("py-spy")
    argv = [str(spy) if spy.exists() else "py-spy", "record", "--pid", str(os.getpid())]
    argv += ["--format", "raw", "--idle", "--threads", "--nonblocking", "-o", out]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def fresh_app(bootstrap: str, state_dir: Path):  # type: ignore[no-untyped-def]
    import streamrt.examples.sessions  # the app of apps/sessions.py and the demo

    module = importlib.reload(streamrt.examples.sessions)
    app = module.app
    app.configure(
        {
            "bootstrap.servers": bootstrap,
            "group.instance.id": "bench-1",
            "num.stream.threads": 1,
            "state.dir": str(state_dir),
            "commit.interval.ms": 1000,
            "session.timeout.ms": 10000,
            **json.loads(os.environ.get("PERF_CONFIG", "{}")),
        }
    )
    return app


def _slow_restore(ms: float) -> None:
    """BENCH_SLOW_RESTORE_MS: a sleep before each restored batch (see the module docstring)."""
    from streamrt.state.manager import StateManager

    original = StateManager.restore_batch

    def slow(self, changelog, records, next_offset):  # type: ignore[no-untyped-def]
        rows = list(records)  # per 100 records, so the slowdown does not depend on batch sizes
        time.sleep(ms / 1000 * max(1, len(rows) / 100))
        return original(self, changelog, rows, next_offset)

    StateManager.restore_batch = slow  # type: ignore[method-assign]


def wait(predicate, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark step timed out")
        time.sleep(0.1)


def _std_json() -> None:
    """PERF_STDJSON=1: the JSON serde on the stdlib (the lever's 'before')."""
    import streamrt.serde as serde

    def ser(self, value):  # type: ignore[no-untyped-def]
        if value is None:
            return None
        return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()

    def de(self, data):  # type: ignore[no-untyped-def]
        return None if data is None else json.loads(data)

    serde.JsonSerde.serialize = ser  # type: ignore[method-assign]
    serde.JsonSerde.deserialize = de  # type: ignore[method-assign]


def main() -> None:
    if os.environ.get("PERF_STDJSON"):
        _std_json()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=20000)
    ap.add_argument("--clicks", type=int, default=100000)
    ap.add_argument("--profile-restore", help="py-spy output file for the restore phase")
    ap.add_argument("--json", type=Path, help="also write the figures to this file as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        broker = start_broker(f"{tmp}/broker", port, "group.initial.rebalance.delay.ms=0")
        bootstrap = f"127.0.0.1:{port}"
        try:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic("clicks", 2, 1)])["clicks"].result(10)
            produce(bootstrap, args.users, args.clicks)
            base = baseline(bootstrap, args.clicks)

            state = Path(tmp) / "state"
            app = fresh_app(bootstrap, state)
            t0 = time.perf_counter()
            app.start()

            def processed() -> int:
                return sum(t.records_processed for t in app.metadata_for_local_threads())

            wait(lambda: processed() > 0, 600)
            t_first, n_first = time.perf_counter(), processed()
            wait(lambda: processed() >= args.clicks, 600)
            rate = args.clicks / (time.perf_counter() - t0)
            steady = (args.clicks - n_first) / (time.perf_counter() - t_first)
            app.stop()

            shutil.rmtree(state)  # lost disk: everything comes back from the changelog
            if os.environ.get("BENCH_SLOW_RESTORE_MS"):
                _slow_restore(float(os.environ["BENCH_SLOW_RESTORE_MS"]))
            app = fresh_app(bootstrap, state)
            spy = start_spy(args.profile_restore) if args.profile_restore else None
            if spy is not None:
                time.sleep(1.0)  # py-spy attaches
            t_restart = time.perf_counter()
            app.start()

            def restored() -> tuple[int, int, float]:
                ts = app.metadata_for_local_threads()
                return (
                    sum(t.records_restored for t in ts),
                    sum(t.bytes_restored for t in ts),
                    sum(t.restore_time_ms for t in ts),
                )

            wait(
                lambda: (
                    restored()[0] >= args.users
                    and all(
                        not t.restoring_tasks and t.active_tasks
                        for t in app.metadata_for_local_threads()
                    )
                ),
                600,
            )
            wall = time.perf_counter() - t_restart
            records, nbytes, ms = restored()
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(30)
            app.stop()
            fetched, fetch_rate = bare_fetch(bootstrap, "sessions-profiles-changelog", 2)
            _, rd_rate = bare_fetch_librdkafka(bootstrap, "sessions-profiles-changelog", 2)
        finally:
            broker.terminate()
            broker.wait(10)
    print(f"baseline (aiokafka consume + json.loads): {base:,.0f} records/s")
    print(f"sessions app, 1 stream thread: {rate:,.0f} records/s  ratio {rate / base:.2f}")
    print(f"  steady (from the first processed record): {steady:,.0f} records/s")
    print(
        f"restore wall clock (start -> every task RUNNING): {wall:.2f}s = "
        f"{records / wall:,.0f} records/s; ratio to bare fetch {records / wall / fetch_rate:.2f}"
    )
    secs = ms / 1000
    print(
        f"full restore: {records:,} records, {nbytes / 1e6:.1f} MB in {secs:.2f}s = "
        f"{records / secs:,.0f} records/s, {nbytes / 1e6 / secs:.1f} MB/s  "
        f"(ratio to baseline {records / secs / base:.2f})"
    )
    print(
        f"bare aiokafka fetch of the changelog: {fetched:,} records = {fetch_rate:,.0f} "
        f"records/s; restore ratio to the bare fetch {records / secs / fetch_rate:.2f}"
    )
    print(
        f"bare librdkafka fetch of the changelog: {rd_rate:,.0f} records/s; restore ratio to "
        f"the bare librdkafka fetch {records / secs / rd_rate:.2f} (wall clock "
        f"{records / wall / rd_rate:.2f})"
    )
    if args.json:
        figures = {
            "users": args.users,
            "clicks": args.clicks,
            "baseline_rate": base,
            "app_rate": rate,
            "steady_rate": steady,
            "restored_records": records,
            "restored_bytes": nbytes,
            "restore_seconds": secs,
            "restore_wall_seconds": wall,
            "bare_aiokafka_rate": fetch_rate,
            "bare_librdkafka_rate": rd_rate,
            "restore_vs_bare_aiokafka": records / secs / fetch_rate,
            "restore_vs_bare_librdkafka": records / secs / rd_rate,
        }
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
