"""Records whose timestamp is exactly 0, produced beside librdkafka with CreateTime 0 kept.

Why: librdkafka reads a message timestamp of 0 as "now" (``rd_kafka_msg_new0`` stamps the
wall clock when the timestamp is 0; ``Producer.produce(timestamp=0)`` is its default), so no
argument of confluent-kafka's ``produce`` writes CreateTime 0. Kafka Streams does write it
(a ``ProducerRecord`` timestamp of 0 is kept), and a topology fed records at 0 must put 0 on
its output, changelogs and repartition topics. Such records are rare (1970-01-01), so under
at_least_once they take a slow path that keeps each partition's order:
:class:`~.rdkafka_producer.LibrdkafkaProducer` first waits for every record queued before one,
then sends it here and waits for its ack.

Under exactly_once_v2 a side producer would write outside the thread's transaction (its records
visible even if the transaction aborts: not exactly once), and no librdkafka call keeps 0
inside it, so :class:`ZeroTimestampGuard` refuses such a record with an error that names the
input record (docs/operations.md, "Records at timestamp 0").
"""

from __future__ import annotations

from collections.abc import Callable

from aiokafka import AIOKafkaProducer

from streamrt.runtime.exception_handlers import ErrorContext, RecordFailedError, Stage
from streamrt.runtime.stores import RecordCollector, RecordContext

__all__ = ("ZeroTimestampGuard", "ZeroTimestampSender")

#: what :class:`RecordFailedError` reports as the deciding "handler"
REFUSED_BY = "exactly_once_v2 keeps no timestamp 0"


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


class ZeroTimestampGuard:
    """exactly_once_v2: one task's sends, a record at timestamp 0 refused.

    Raised as :class:`RecordFailedError` (the processing handlers pass it on, the supervisor
    counts it as this record's failure): the transaction is aborted, no offset moves, nothing
    is lost; the input record named is the one the task was processing (for a cached store's
    changelog flushed at a commit: the last one it processed)."""

    __slots__ = ("_record", "_send", "_task_id")

    def __init__(self, collector: RecordCollector, task_id: str) -> None:
        self._send = collector.send
        self._task_id = task_id
        self._record = RecordContext()

    def watch(self, record: RecordContext) -> None:
        """The task's record context: the input record a refusal names."""
        self._record = record

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        if timestamp_ms == 0:
            self._refuse(topic, partition)
        self._send(topic, key, value, partition, timestamp_ms, headers)

    def _refuse(self, topic: str, partition: int | None) -> None:
        record = self._record
        context = ErrorContext(
            Stage.PRODUCTION,
            record.topic,
            record.partition,
            record.offset,
            record.timestamp,
            None,
            None,
            record.headers,
            self._task_id,
        )
        where = topic if partition is None else f"{topic}-{partition}"
        cause = ValueError(
            f"a record for {where} has timestamp 0, which librdkafka cannot write inside a "
            "transaction (it stamps 0 as now); give the input a timestamp after 0 or use "
            "processing.guarantee=at_least_once"
        )
        raise RecordFailedError(context, cause, REFUSED_BY)
