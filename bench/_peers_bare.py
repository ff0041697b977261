"""The bare floor of ``bench/peers_throughput.py``: consume → ``json.loads`` → filter/map →
``json.dumps`` → produce, no framework.

Word count (``PEERS_WORKLOAD=wordcount``, confluent-kafka only): the stream thread's data flow
without the runtime, so its ratio to a stream thread is the runtime's cost: lines split and
sent through a repartition topic keyed by word, read back by the same consumer, counted in a
dict, each new count sent to a changelog topic and to the sink (12 records a line, as the
stream thread sends); no store, no delivery reports, no commits of its own.

``PEERS_CLIENT=confluent`` (confluent-kafka/librdkafka, the fastest Python client: the floor
any runtime pays) or ``aiokafka`` (the client streamrt is built on). Consumer group with
auto-commit; the producer uses librdkafka's defaults or aiokafka's 16 KB batches as given.
Same ``PEERS_*`` environment as the other contenders; stops on SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers_workloads import stateless_keep, stateless_map, words

ENV = os.environ.get
STOP: list[bool] = []


def confluent_loop() -> None:
    from confluent_kafka import Consumer, Producer

    consumer = Consumer(
        {
            "bootstrap.servers": ENV("PEERS_BOOTSTRAP"),
            "group.id": ENV("PEERS_APP_ID", "peers"),
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer({"bootstrap.servers": ENV("PEERS_BOOTSTRAP"), "linger.ms": 5})
    sink = ENV("PEERS_OUT", "out")
    consumer.subscribe([ENV("PEERS_IN", "in")])
    while not STOP:
        for msg in consumer.consume(1000, 0.1):
            if msg.error():
                continue
            value = json.loads(msg.value())
            if stateless_keep(value):
                producer.produce(sink, json.dumps(stateless_map(value)).encode(), msg.key())
        producer.poll(0)
    producer.flush(10)
    consumer.close()


def produce(producer: Any, topic: str, value: bytes, key: bytes | None) -> None:
    """``producer.produce``, waiting for room when librdkafka's queue is full."""
    while True:
        try:
            producer.produce(topic, value, key)
            return
        except BufferError:
            producer.poll(0.05)


def confluent_wordcount() -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap, app = ENV("PEERS_BOOTSTRAP"), ENV("PEERS_APP_ID", "peers")
    source, sink = ENV("PEERS_IN", "in"), ENV("PEERS_OUT", "out")
    through, changelog = f"{app}-words-repartition", f"{app}-counts-changelog"
    partitions = int(ENV("PEERS_PARTITIONS", "4"))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics(
        [NewTopic(t, partitions, 1) for t in (through, changelog)]
    ).values():
        fut.result(15)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": app, "auto.offset.reset": "earliest"}
    )
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    consumer.subscribe([source, through])
    counts: dict[bytes, int] = {}
    while not STOP:
        for msg in consumer.consume(1000, 0.1):
            if msg.error():
                continue
            if msg.topic() == source:
                for word in words(msg.value().decode()):
                    raw = word.encode()
                    produce(producer, through, raw, raw)
                continue
            word_key = msg.key()
            n = counts.get(word_key, 0) + 1
            counts[word_key] = n
            produce(producer, changelog, n.to_bytes(8, "big"), word_key)
            produce(producer, sink, str(n).encode(), word_key)
        producer.poll(0)
    producer.flush(10)
    consumer.close()


async def aiokafka_loop() -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    consumer = AIOKafkaConsumer(
        ENV("PEERS_IN", "in"),
        bootstrap_servers=ENV("PEERS_BOOTSTRAP"),
        group_id=ENV("PEERS_APP_ID", "peers"),
        auto_offset_reset="earliest",
    )
    producer = AIOKafkaProducer(bootstrap_servers=ENV("PEERS_BOOTSTRAP"), linger_ms=5)
    sink = ENV("PEERS_OUT", "out")
    await producer.start()
    await consumer.start()
    while not STOP:
        batches = await consumer.getmany(timeout_ms=100, max_records=2000)
        for msgs in batches.values():
            for msg in msgs:
                value = json.loads(msg.value)
                if stateless_keep(value):
                    await producer.send(sink, json.dumps(stateless_map(value)).encode(), msg.key)
    await producer.flush()
    await consumer.stop()
    await producer.stop()


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: STOP.append(True))
    if ENV("PEERS_CLIENT", "confluent") == "confluent":
        if ENV("PEERS_WORKLOAD", "stateless") == "wordcount":
            confluent_wordcount()
        else:
            confluent_loop()
    else:
        asyncio.run(aiokafka_loop())


if __name__ == "__main__":
    main()
