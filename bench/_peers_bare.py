"""The bare floor of ``bench/peers_throughput.py``: consume → ``json.loads`` → filter/map →
``json.dumps`` → produce, stateless workload only, no framework.

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers_workloads import stateless_keep, stateless_map

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
        confluent_loop()
    else:
        asyncio.run(aiokafka_loop())


if __name__ == "__main__":
    main()
