"""The stream threads' producer hands each record to confluent-kafka positionally: keyword
arguments cost its C ``produce`` a dict and a name lookup each, about 0.5 us a record of the
sessions fold's two (docs/benchmarks.md). The records still reach a real broker whole: key,
value, partition, timestamp, headers, and the offset reached for the changelog checkpoint."""

from __future__ import annotations

import asyncio
from typing import Any

import confluent_kafka
import pytest

from streamrt.runtime.engine.clients.rdkafka_producer import (
    LibrdkafkaCollector,
    LibrdkafkaProducer,
)
from streamrt.topic_partition import TopicPartition
from tests.kafka_helpers import create_topic, read_all

CALLS: list[tuple[int, tuple[str, ...]]] = []


class _RecordingProducer(confluent_kafka.Producer):  # type: ignore[misc]
    """confluent-kafka's producer, noting how each ``produce`` is called (the one thing this
    test isolates); the records go to the broker as usual."""

    def produce(self, *args: Any, **kwargs: Any) -> None:
        CALLS.append((len(args), tuple(sorted(kwargs))))
        super().produce(*args, **kwargs)


def test_records_are_produced_positionally_and_arrive_whole(
    broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(confluent_kafka, "Producer", _RecordingProducer)
    CALLS.clear()
    create_topic(broker.bootstrap, "pos-changelog", 2)
    create_topic(broker.bootstrap, "pos-sink", 2)

    async def go() -> dict[TopicPartition, int]:
        producer = LibrdkafkaProducer({"bootstrap.servers": broker.bootstrap})
        await producer.start()
        collector = LibrdkafkaCollector(producer)
        try:
            for i in range(5):
                collector.send("pos-changelog", b"k%d" % i, b"v%d" % i, 1, 1_000 + i)
                collector.send("pos-sink", b"k%d" % i, b"s%d" % i, None, 2_000 + i, [("h", b"x")])
            return await collector.flush()
        finally:
            await producer.stop()

    reached = asyncio.run(go())
    assert CALLS and all(kwargs == () for _args, kwargs in CALLS), CALLS[:3]
    assert reached[TopicPartition("pos-changelog", 1)] == 5  # the checkpoint's offset
    changelog = read_all(broker.bootstrap, "pos-changelog")
    assert [(r.partition, r.key, r.value, r.timestamp) for r in changelog] == [
        (1, b"k%d" % i, b"v%d" % i, 1_000 + i) for i in range(5)
    ]
    sink = sorted(read_all(broker.bootstrap, "pos-sink"), key=lambda r: r.timestamp)
    assert [(r.key, r.value, r.timestamp, list(r.headers)) for r in sink] == [
        (b"k%d" % i, b"s%d" % i, 2_000 + i, [("h", b"x")]) for i in range(5)
    ]
