"""MainConsumer: what a stream thread and its tasks use of the thread's main (input) consumer.

Why an interface: the group is kept by streamrt's own member, so the consumer only fetches in
manual-assign mode; the thread, its tasks and the member listener see only these methods of
:class:`~streamrt.runtime.engine.clients.rdkafka_consumer.LibrdkafkaConsumer` (and the broker-less
test rig its stand-in). Records carry the fields of aiokafka's ``ConsumerRecord``: ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestamp_type``, ``key``, ``value``, ``headers``.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any, Protocol

from streamrt.topic_partition import TopicPartition

__all__ = ("MainConsumer",)


class MainConsumer(Protocol):
    """A fetching consumer in manual-assign mode (no group, no offset commits)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Replace the assignment (a new partition starts where a seek puts it, else at the
        group's committed offset or ``auto.offset.reset``)."""

    def assignment(self) -> Set[TopicPartition]: ...

    def seek(self, partition: TopicPartition, offset: int) -> None: ...

    async def seek_to_beginning(self, *partitions: TopicPartition) -> Any: ...

    async def position(self, partition: TopicPartition) -> int: ...

    def pause(self, *partitions: TopicPartition) -> None: ...

    def resume(self, *partitions: TopicPartition) -> None: ...

    def paused(self) -> Set[TopicPartition]: ...

    def highwater(self, partition: TopicPartition) -> int | None: ...

    def last_stable_offset(self, partition: TopicPartition) -> int | None: ...

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[Any]]:
        """Fetched records per partition, waiting up to ``timeout_ms`` when none are there."""
        ...
