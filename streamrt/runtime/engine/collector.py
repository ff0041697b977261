"""Collector: what a thread's record collector does, whichever guarantee it runs under.

Processing is synchronous; sends are queued in order and drained by the thread so order per
partition is kept (:class:`~streamrt.runtime.engine.clients.rdkafka_producer.LibrdkafkaCollector`).
``flush`` reports the end offset delivered per partition that records named (changelog records
always do); each task's state manager takes the ones of the changelog partitions it registered
(the collector does not know which topics are changelogs).
"""

from __future__ import annotations

from typing import Protocol

from streamrt.topic_partition import TopicPartition

__all__ = ("Collector", "ThreadProducer")


class ThreadProducer(Protocol):
    """The life of a thread's producer, whichever client it is."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Collector(Protocol):
    """What the thread, its tasks and its committer need from the record collector: ordered
    sends, a drain between batches, and a flush that reports the offsets delivered."""

    @property
    def producer(self) -> ThreadProducer: ...

    @property
    def checks_range(self) -> bool: ...

    def partitions_for(self, topic: str) -> int:
        """The topic's partition count (0: unknown), for sinks with a stream partitioner."""
        ...

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
