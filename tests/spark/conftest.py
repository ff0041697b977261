"""One SparkSession per pytest process (JVM start-up costs 5-15 s) and Kafka helpers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from streamrt.spark.session import get_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_session(
        app_name="streamrt-tests",
        conf={
            # Smaller and quicker-starting JVM: tests move little data.
            "spark.driver.memory": "512m",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        },
    )
    yield session
    session.stop()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(15)


Produced = tuple[int, int, bytes | None, bytes]  # partition, offset, key, value


def produce(
    bootstrap: str,
    topic: str,
    records: Sequence[tuple[bytes | None, bytes]],
    headers: Sequence[tuple[str, bytes]] | None = None,
    partition: int = -1,
) -> list[Produced]:
    """Produce and return what the broker acknowledged: (partition, offset, key, value).

    ``partition=-1`` lets the key choose (murmur2, as Kafka's Java client does).
    """
    acked: list[Produced] = []
    failures: list[str] = []

    def on_delivery(error: object, message: object) -> None:
        if error is not None:
            failures.append(str(error))
        else:
            acked.append((message.partition(), message.offset(), message.key(), message.value()))  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            partition=partition,
            on_delivery=on_delivery,
        )
    assert producer.flush(30) == 0
    assert not failures, failures
    return sorted(acked)
