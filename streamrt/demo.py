"""``streamrt demo``: the README's first command, a tour on the embedded broker.

It starts a broker in a temporary directory, creates a topic, produces and consumes with a
real Kafka client (aiokafka), and prints what happened.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

__all__ = ("register",)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "demo",
        help="run the main job on the embedded broker and print a report",
        description="Start an embedded broker, produce and consume with aiokafka, report.",
    )
    p.add_argument("--records", type=int, default=10_000, help="records to produce")
    p.add_argument("--partitions", type=int, default=4, help="partitions of the demo topic")
    p.add_argument("--data-dir", type=Path, default=None, help="broker data dir (default: temp)")
    p.set_defaults(func=run_demo)


async def _produce_consume(bootstrap: str, topic: str, records: int, partitions: int) -> dict:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(topic, partitions, 1)])
    await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    t0 = time.perf_counter()
    futures = [
        await producer.send(topic, f"value-{i}".encode(), key=f"key-{i % 100}".encode())
        for i in range(records)
    ]
    await producer.flush()
    produced = [await f for f in futures]
    t_produce = time.perf_counter() - t0
    await producer.stop()

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id="demo", auto_offset_reset="earliest"
    )
    await consumer.start()
    t0 = time.perf_counter()
    seen = 0
    per_partition: dict[int, int] = {}
    while seen < records and time.perf_counter() - t0 < 60:
        batch = await consumer.getmany(timeout_ms=1000)
        for tp, msgs in batch.items():
            seen += len(msgs)
            per_partition[tp.partition] = per_partition.get(tp.partition, 0) + len(msgs)
    t_consume = time.perf_counter() - t0
    await consumer.commit()
    await consumer.stop()
    return {
        "produced": len(produced),
        "consumed": seen,
        "per_partition": dict(sorted(per_partition.items())),
        "produce_s": t_produce,
        "consume_s": t_consume,
    }


def run_demo(args: argparse.Namespace) -> int:
    from streamrt.broker.embedded import EmbeddedBroker

    async def main() -> dict:
        with tempfile.TemporaryDirectory(prefix="streamrt-demo-") as tmp:
            data_dir = args.data_dir or Path(tmp) / "broker"
            overrides = {"group.initial.rebalance.delay.ms": "0"}
            async with EmbeddedBroker(data_dir, overrides) as bootstrap:
                print(f"[1/3] embedded broker up at {bootstrap} (data dir {data_dir})", flush=True)
                print(
                    f"[2/3] producing {args.records} records to 'demo' "
                    f"({args.partitions} partitions) with aiokafka, acks=all",
                    flush=True,
                )
                result = await _produce_consume(bootstrap, "demo", args.records, args.partitions)
                print("[3/3] consumed them back in consumer group 'demo'", flush=True)
                return result

    r = asyncio.run(main())
    print()
    print("== streamrt demo report ==")
    print(f"produced  {r['produced']:>8} records in {r['produce_s']:.2f}s")
    print(f"consumed  {r['consumed']:>8} records in {r['consume_s']:.2f}s")
    print(f"per partition: {r['per_partition']}")
    ok = r["produced"] == r["consumed"] == args.records
    print("check:", "OK, every record produced was consumed" if ok else "MISMATCH")
    return 0 if ok else 1
