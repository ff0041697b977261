"""Issue 24 item 2: the data-path options measured on the same records, CPU per record.

One ``streamrt broker`` subprocess; this process's CPU time (``time.process_time``: every
thread of this process, librdkafka's own threads included; the broker is another process)
per record for:

- encode+produce N records (a ~2.3 KB session profile each, the fold's output, keyed by user,
  to a 2-partition topic), every delivery report awaited (the runtime needs the offsets):
  ``aiokafka-send`` (``await send()`` per record, as the runtime's collector does),
  ``aiokafka-batch`` (batch-level encoding: ``create_batch``/``append``/``send_batch`` per
  partition), ``confluent`` (librdkafka ``produce`` + a delivery callback, ``poll``/``flush``);
- fetch+decode the same N records (key, value, offset, timestamp touched per record):
  ``aiokafka-getmany`` (the runtime's main consumer path) and ``confluent-consume``
  (``consume(num_messages=...)``);
- with ``--clicks``: the small JSON clicks (the fold's input) instead of profiles.

    PYTHONPATH=. .venv/bin/python bench/data_path_options.py --records 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker

from streamrt.deploy.session_profiles import add_click, new_profile

PRODUCER = {"acks": "all", "linger_ms": 10, "max_batch_size": 1024 * 1024}
PARTITIONS = 2


def records(n: int, clicks: bool) -> list[tuple[bytes, bytes]]:
    """The same keyed records for every option."""
    users = max(1, n // 5)
    out = []
    for i in range(n):
        user = f"u{i % users:07d}"
        click = {"user": user, "page": f"/p/{i % 97}", "ts": i}
        value = click if clicks else add_click(user, click, new_profile())
        out.append((user.encode(), json.dumps(value, separators=(",", ":")).encode()))
    return out


def cpu(fn: Callable[[], Any]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


async def create_topic(bootstrap: str, topic: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()


def aiokafka_send(bootstrap: str, topic: str, recs: list[tuple[bytes, bytes]]) -> None:
    from aiokafka import AIOKafkaProducer

    async def go() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, **PRODUCER)  # type: ignore[arg-type]
        await p.start()
        futs = [await p.send(topic, v, key=k) for k, v in recs]
        await p.flush()
        for f in futs:
            (await f).offset  # noqa: B018
        await p.stop()

    asyncio.run(go())


def aiokafka_batch(bootstrap: str, topic: str, recs: list[tuple[bytes, bytes]]) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.partitioner import murmur2

    async def go() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, **PRODUCER)  # type: ignore[arg-type]
        await p.start()
        batches = {part: p.create_batch() for part in range(PARTITIONS)}
        futs = []
        ts = int(time.time() * 1000)
        for k, v in recs:
            part = (murmur2(k) & 0x7FFFFFFF) % PARTITIONS
            if batches[part].append(key=k, value=v, timestamp=ts) is None:
                batches[part].close()
                futs.append(await p.send_batch(batches[part], topic, partition=part))
                batches[part] = p.create_batch()
                batches[part].append(key=k, value=v, timestamp=ts)
        for part, b in batches.items():
            b.close()
            futs.append(await p.send_batch(b, topic, partition=part))
        for f in futs:
            await f
        await p.stop()

    asyncio.run(go())


def confluent_produce(bootstrap: str, topic: str, recs: list[tuple[bytes, bytes]]) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 10,
            "batch.size": 1024 * 1024,
            "partitioner": "murmur2_random",
        }
    )
    reached: dict[int, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            reached[msg.partition()] = msg.offset() + 1

    for k, v in recs:
        while True:
            try:
                p.produce(topic, v, k, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    p.flush(30)


def aiokafka_fetch(bootstrap: str, topic: str, n: int) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> None:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, max_poll_records=2000)
        await c.start()
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        seen = 0
        while seen < n:
            for msgs in (await c.getmany(timeout_ms=1000, max_records=2000)).values():
                for m in msgs:
                    m.key, m.value, m.offset, m.timestamp  # noqa: B018
                seen += len(msgs)
        await c.stop()

    asyncio.run(go())


def confluent_fetch(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{time.time()}",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    while seen < n:
        for m in c.consume(num_messages=2000, timeout=1.0):
            if m.error() is None:
                m.key(), m.value(), m.offset(), m.timestamp()
                seen += 1
    c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clicks", action="store_true", help="the small clicks, not profiles")
    args = ap.parse_args()
    recs = records(args.records, args.clicks)
    mb = sum(len(k) + len(v) for k, v in recs) / 1e6
    print(f"{args.records:,} records, {mb:.1f} MB of keys+values")
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        broker = start_broker(data, port)
        bootstrap = f"127.0.0.1:{port}"
        try:
            results: dict[str, list[float]] = {}
            producers = {
                "produce aiokafka-send": aiokafka_send,
                "produce aiokafka-batch": aiokafka_batch,
                "produce confluent": confluent_produce,
            }
            for run in range(args.repeat):
                for name, fn in producers.items():
                    topic = f"{name.split()[1]}-{run}"
                    asyncio.run(create_topic(bootstrap, topic))
                    secs = cpu(lambda fn=fn, topic=topic: fn(bootstrap, topic, recs))
                    results.setdefault(name, []).append(secs)
                    fetch_topic = f"aiokafka-send-{run}"
                for name, fetch in (
                    ("fetch aiokafka-getmany", aiokafka_fetch),
                    ("fetch confluent-consume", confluent_fetch),
                ):
                    secs = cpu(lambda f=fetch, t=fetch_topic: f(bootstrap, t, args.records))
                    results.setdefault(name, []).append(secs)
        finally:
            broker.terminate()
            broker.wait()
    print(f"{'option':28} {'us CPU/record (median)':>24} {'spread (min-max)':>20}")
    for name, secs in results.items():
        per = [s / args.records * 1e6 for s in secs]
        print(f"{name:28} {statistics.median(per):24.2f} {min(per):9.2f} - {max(per):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
