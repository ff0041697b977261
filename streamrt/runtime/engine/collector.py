"""ProducerCollector: buffers a task's output and sends it through the thread's producer.

Processing is synchronous; sends are queued here in order and drained by the thread with
``await producer.send`` so order per partition is kept. :meth:`flush` reports the end offset
delivered per partition; each task's state manager takes the ones of the changelog
partitions it registered (the collector does not know which topics are changelogs).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from aiokafka import AIOKafkaProducer

from streamrt.state import TopicPartition

__all__ = ("Collector", "ProducerCollector", "ThreadProducer")


class ThreadProducer(Protocol):
    """The life of a thread's producer, whichever client it is."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Collector(Protocol):
    """What the thread, its tasks and its committer need from the record collector: ordered
    sends, a drain between batches, and a flush that reports the offsets delivered."""

    @property
    def producer(self) -> ThreadProducer: ...

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None: ...

    async def drain(self) -> None: ...

    async def flush(self) -> dict[TopicPartition, int]: ...


class ProducerCollector:
    def __init__(self, producer: AIOKafkaProducer) -> None:
        self.producer = producer
        self._queue: list[
            tuple[str, bytes | None, bytes | None, int | None, int, list[tuple[str, bytes]] | None]
        ] = []
        self._inflight: list[asyncio.Future[Any]] = []

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self._queue.append((topic, key, value, partition, timestamp_ms, headers))

    async def drain(self) -> None:
        """Hand every queued record to the producer (does not wait for delivery)."""
        queue, self._queue = self._queue, []
        for topic, key, value, partition, ts, headers in queue:
            fut = await self.producer.send(
                topic,
                value=value,
                key=key,
                partition=partition,
                timestamp_ms=ts if ts >= 0 else None,  # 0 is a timestamp too
                headers=headers,
            )
            self._inflight.append(fut)

    async def flush(self) -> dict[TopicPartition, int]:
        """Send and wait for delivery of everything; returns the next offset reached per
        partition written since the last flush.

        Raises if any record was not delivered, so the commit stops before offsets move.
        """
        await self.drain()
        await self.producer.flush()
        inflight, self._inflight = self._inflight, []
        reached: dict[TopicPartition, int] = {}
        for fut in inflight:
            md = await fut
            tp = TopicPartition(md.topic, md.partition)
            reached[tp] = max(reached.get(tp, 0), md.offset + 1)
        return reached
