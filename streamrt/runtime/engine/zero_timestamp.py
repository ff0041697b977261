"""Records whose timestamp is exactly 0, produced beside librdkafka with CreateTime 0 kept.

Why: librdkafka reads a message timestamp of 0 as "now" (``rd_kafka_msg_new0`` stamps the
wall clock when the timestamp is 0; ``Producer.produce(timestamp=0)`` is its default), so no
argument of confluent-kafka's ``produce`` writes CreateTime 0. Kafka Streams does write it
(a ``ProducerRecord`` timestamp of 0 is kept), and a topology fed records at 0 must put 0 on
its output, changelogs and repartition topics. Such records are rare (1970-01-01), so they take
a slow path that keeps each partition's order: :class:`~.rdkafka_producer.LibrdkafkaProducer`
first waits for every record queued before one, then sends it here and waits for its ack.
"""

from __future__ import annotations

from collections.abc import Callable

from aiokafka import AIOKafkaProducer

__all__ = ("ZeroTimestampSender",)


class ZeroTimestampSender:
    """aiokafka's producer, created on first use, for the records at timestamp 0 (at-least-once:
    it is not part of a transaction)."""

    def __init__(self, factory: Callable[[], AIOKafkaProducer]) -> None:
        self._factory = factory
        self._producer: AIOKafkaProducer | None = None

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        headers: list[tuple[str, bytes]] | None,
    ) -> tuple[str, int, int]:
        """Send one record with CreateTime 0 and wait for it: (topic, partition, next offset).
        A keyless record without a partition goes where aiokafka's partitioner puts it; keyed
        ones where murmur2 puts them, as librdkafka's (``murmur2_random``) and Java's do."""
        if self._producer is None:
            producer = self._factory()
            await producer.start()
            self._producer = producer
        meta = await self._producer.send_and_wait(
            topic, value, key=key, partition=partition, timestamp_ms=0, headers=headers
        )
        return meta.topic, meta.partition, meta.offset + 1

    async def stop(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()
