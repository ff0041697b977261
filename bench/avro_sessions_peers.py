"""The Avro sessions fold: streamrt's registry serdes against Quix Streams' (issue 27, item 4).

One ``streamrt broker`` subprocess and one Apicurio Registry; N Avro clicks (Confluent wire
format, written by confluent-kafka's ``AvroSerializer``) over ``--users`` users; then each
contender in its own process, one after the other, folds them into one Avro profile per user
(``apps/avro_sessions.py`` version 1, and the same fold in Quix, ``bench/_avro_sessions_quix.py``).
The rate is measured outside the contender as in ``bench/peers_throughput.py``: the sink's end
offsets sampled every 100 ms, the time between 10 % and 90 % of the N outputs. The output is
then read back and checked (the last profile per user counts that user's clicks).

    .venv/bin/python bench/avro_sessions_peers.py --records 50000 \\
        --quix-python .venv-bench/bin/python
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from apps.avro_sessions import CLICK_V1, PROFILE_V1
from streamrt.dev.apicurio import ApicurioRegistry

ROOT = Path(__file__).resolve().parents[1]
IN = "clicks-avro"
STREAMRT_APP = """
import sys
from apps.avro_sessions import make_app
app = make_app({{"bootstrap.servers": {bootstrap!r}, "state.dir": {state!r},
                 "application.id": "avro-peers-streamrt"}},
                {{"schema.registry.url": {url!r}}})
app.run()
"""


def produce(bootstrap: str, url: str, records: int, users: int, partitions: int) -> Counter:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = (IN, "avro-session-profiles", "quix-avro-profiles")
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result()
    ser = AvroSerializer(SchemaRegistryClient({"url": url}), CLICK_V1)
    ctx = SerializationContext(IN, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    per_user: Counter = Counter()
    for i in range(records):
        user = f"user-{i % users}"
        per_user[user] += 1
        value = ser({"user": user, "page": f"/p/{i % 97}", "ts": i}, ctx)
        producer.produce(IN, key=user.encode(), value=value)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush()
    return per_user


def end_offsets(consumer: Consumer, topic: str, partitions: int) -> int:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    total = 0
    for tp in tps:
        try:
            total += consumer.get_watermark_offsets(tp, timeout=5, cached=False)[1]
        except Exception:  # the contender has not created its sink yet
            return 0
    return total


def measure(bootstrap: str, topic: str, partitions: int, records: int, timeout: float) -> float:
    """Input records/s between 10 % and 90 % of the expected output."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "avro-peers-probe"})
    t10 = t90 = None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            done = end_offsets(consumer, topic, partitions)
            now = time.monotonic()
            if t10 is None and done >= records * 0.1:
                t10 = now
            if done >= records * 0.9:
                t90 = now
            if done >= records:
                break
            time.sleep(0.1)
    finally:
        consumer.close()
    if t10 is None or t90 is None or t90 <= t10:
        raise RuntimeError(f"{topic}: no 10 %..90 % interval (too few records, or timed out)")
    return records * 0.8 / (t90 - t10)


def verify(bootstrap: str, url: str, topic: str, per_user: Counter) -> str:
    de = AvroDeserializer(SchemaRegistryClient({"url": url}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    last: dict[str, int] = {}
    seen, quiet = 0, 0
    while quiet < 20:
        msg = consumer.poll(0.25)
        if msg is None or msg.error():
            quiet += 1
            continue
        quiet = 0
        seen += 1
        profile = de(msg.value(), ctx)
        last[profile["user"]] = profile["clicks"]
    consumer.close()
    ok = last == dict(per_user)
    return f"{seen} outputs, last profile per user {'correct' if ok else 'WRONG'}"


def run(name: str, args: list[str], env: dict[str, str], out: str, ctx: dict) -> None:
    proc = subprocess.Popen(args, env={**os.environ, **env}, cwd=ROOT)
    try:
        rate = measure(ctx["bootstrap"], out, ctx["partitions"], ctx["records"], ctx["timeout"])
        check = verify(ctx["bootstrap"], ctx["url"], out, ctx["per_user"])
        print(f"{name:10s} {rate:>10,.0f} records/s   {check}", flush=True)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--users", type=int, default=5_000)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--quix-python", help="the bench venv's python (Quix Streams)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="avro-peers-"))
    port = free_port()
    broker = start_broker(str(work / "broker"), port, "num.partitions=1")
    registry = ApicurioRegistry(work / "registry").start()
    bootstrap = f"127.0.0.1:{port}"
    try:
        per_user = produce(bootstrap, registry.url, args.records, args.users, args.partitions)
        ctx = {
            "bootstrap": bootstrap,
            "url": registry.url,
            "partitions": args.partitions,
            "records": args.records,
            "timeout": args.timeout,
            "per_user": per_user,
        }
        code = STREAMRT_APP.format(bootstrap=bootstrap, state=str(work / "s"), url=registry.url)
        env = {"PYTHONPATH": str(ROOT)}
        run("streamrt", [sys.executable, "-c", code], env, "avro-session-profiles", ctx)
        if args.quix_python:
            quix_env = {
                "AVRO_PEERS_BOOTSTRAP": bootstrap,
                "AVRO_PEERS_REGISTRY": registry.url,
                "AVRO_PEERS_STATE_DIR": str(work / "q"),
                "AVRO_PEERS_PROFILE_SCHEMA": PROFILE_V1,
                "PYTHONWARNINGS": "ignore",
            }
            script = str(ROOT / "bench" / "_avro_sessions_quix.py")
            run("quix", [args.quix_python, script], quix_env, "quix-avro-profiles", ctx)
    finally:
        registry.stop()
        broker.terminate()
        broker.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
