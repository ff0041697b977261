"""Produce and fetch throughput of the embedded broker, next to a raw asyncio socket sink.

The broker runs as a subprocess (`streamrt broker`, uvloop), like in production. The baseline
is an asyncio server in a subprocess that reads and discards bytes: the rate at which this
machine moves bytes over loopback into one Python process. The ratio broker/sink is the
figure that counts (machines are shared and noisy; absolute numbers are not comparable).

    .venv/bin/python bench/broker_throughput.py --records 200000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from _broker import free_port, start_broker

RECORD = 1024


SINK = r"""
import asyncio, sys
try:
    import uvloop
except ImportError:
    uvloop = None
async def handle(r, w):
    while await r.read(1 << 20):
        pass
    w.close()
async def main(port):
    srv = await asyncio.start_server(handle, "127.0.0.1", port)
    print("ready", flush=True)
    await srv.serve_forever()
(uvloop.run if uvloop else asyncio.run)(main(int(sys.argv[1])))
"""


def sink_rate(total_bytes: int) -> float:
    """MB/s of the raw asyncio sink: one client writing 64 KiB chunks."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SINK, str(port)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    chunk = b"x" * 65536
    try:
        s = socket.create_connection(("127.0.0.1", port))
        t0 = time.perf_counter()
        sent = 0
        while sent < total_bytes:
            s.sendall(chunk)
            sent += len(chunk)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)
        elapsed = time.perf_counter() - t0
        s.close()
    finally:
        proc.kill()
    return sent / elapsed / 1e6


def confluent_produce(bootstrap: str, topic: str, n: int, acks: str) -> float:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 262144,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    value = os.urandom(RECORD)
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % 4)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    return time.perf_counter() - t0


def confluent_fetch(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 8388608,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(4)])
    t0 = time.perf_counter()
    got = 0
    while got < n:
        got += len(c.consume(10000, timeout=1.0))
    elapsed = time.perf_counter() - t0
    c.close()
    return elapsed


def aiokafka_produce(bootstrap: str, topic: str, n: int, acks: str) -> float:
    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks=int(acks) if acks != "all" else "all",
            linger_ms=5,
            max_batch_size=262144,
        )
        await p.start()
        value = os.urandom(RECORD)
        t0 = time.perf_counter()
        for i in range(n):
            await p.send(topic, value, partition=i % 4)
        await p.flush()
        elapsed = time.perf_counter() - t0
        await p.stop()
        return elapsed

    return asyncio.run(run())


def aiokafka_fetch(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> float:
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            max_partition_fetch_bytes=8388608,
            fetch_max_bytes=52428800,
        )
        await c.start()
        tps = [TopicPartition(topic, p) for p in range(4)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        t0 = time.perf_counter()
        got = 0
        while got < n:
            batch = await c.getmany(timeout_ms=1000, max_records=100000)
            got += sum(len(v) for v in batch.values())
        elapsed = time.perf_counter() - t0
        await c.stop()
        return elapsed

    return asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--json", default=None, help="write results to this file")
    args = ap.parse_args()
    n = args.records
    mb = n * RECORD / 1e6
    sink = sink_rate(n * RECORD)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        proc = start_broker(tmp, port)
        bootstrap = f"127.0.0.1:{port}"
        try:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": bootstrap})
            for client in ("confluent", "aiokafka"):
                for acks in ("1", "all"):
                    topic = f"bench-{client}-{acks}"
                    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(10)
                    produce = confluent_produce if client == "confluent" else aiokafka_produce
                    fetch = confluent_fetch if client == "confluent" else aiokafka_fetch
                    tp = produce(bootstrap, topic, n, acks)
                    tf = fetch(bootstrap, topic, n)
                    rows.append(
                        {
                            "client": client,
                            "acks": acks,
                            "produce_MBps": mb / tp,
                            "produce_rps": n / tp,
                            "fetch_MBps": mb / tf,
                            "fetch_rps": n / tf,
                        }
                    )
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"raw asyncio socket sink: {sink:.1f} MB/s ({n} x {RECORD} B)")
    print(
        f"{'client':<10} {'acks':<4} {'produce MB/s':>12} {'rec/s':>9} {'ratio':>6}"
        f" {'fetch MB/s':>11} {'rec/s':>9} {'ratio':>6}"
    )
    for r in rows:
        print(
            f"{r['client']:<10} {r['acks']:<4} {r['produce_MBps']:>12.1f} {r['produce_rps']:>9.0f}"
            f" {r['produce_MBps'] / sink:>6.2f} {r['fetch_MBps']:>11.1f} {r['fetch_rps']:>9.0f}"
            f" {r['fetch_MBps'] / sink:>6.2f}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sink_MBps": sink, "records": n, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
