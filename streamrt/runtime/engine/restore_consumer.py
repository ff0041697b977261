"""RestoreConsumer: what restoration and standbys use of a thread's restore consumer.

Why an interface: the restore consumer is librdkafka's whenever the thread's main consumer is
(``StreamsConfig.effective_thread_consumer``), so the fetch and the record decoding run in C on
librdkafka's threads while the stream thread writes the previous batch into RocksDB, and
aiokafka's otherwise (``stream.thread.consumer=aiokafka``, aiokafka's membership).
:class:`~streamrt.runtime.engine.restore.ChangelogRestorer` and
:class:`~streamrt.runtime.engine.standby.StandbyUpdater` see only these methods. Both
implementations read no group and commit nothing: partitions are assigned at the offsets the
stores hold (``None``: the changelog's start).

A fetch hands over :class:`ChangelogBatch` es: the records' key and value bytes as the broker
sent them plus their timestamps, exactly what ``StateManager.restore_batch`` writes, and the
offset after the batch. Nothing is deserialized.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping, Set
from typing import Any, NamedTuple, Protocol

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.runtime.engine import kafka_adapter
from streamrt.runtime.engine.kafka_adapter import assign_at
from streamrt.state import TopicPartition

__all__ = (
    "AiokafkaRestoreConsumer",
    "ChangelogBatch",
    "EndOffsets",
    "RestoreConsumer",
    "gc_paused",
)

#: One changelog record as a store applies it: (key, value or None, record timestamp).
Row = tuple[bytes, bytes | None, int]


class ChangelogBatch(NamedTuple):
    """Records fetched from one changelog partition, in offset order."""

    rows: list[Row]
    next_offset: int  # the offset after the batch's last record
    size: int  # key and value bytes


class EndOffsets(Protocol):
    """Lists end offsets (the last stable offset under read_committed)."""

    async def end_offsets(self, partitions: list[KafkaTP]) -> dict[KafkaTP, int]: ...


class RestoreConsumer(EndOffsets, Protocol):
    """A fetching consumer over changelog partitions, no group."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def assign_at(self, positions: Mapping[TopicPartition, int | None]) -> None:
        """Make the assignment exactly ``positions``, each partition at its offset (``None``:
        the log start); a partition that stays where it is keeps what was prefetched."""

    def assignment(self) -> Set[TopicPartition]: ...

    async def fetch(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, ChangelogBatch]:
        """What was fetched, per partition, waiting up to ``timeout_ms`` when nothing was."""
        ...

    async def position(self, partition: TopicPartition) -> int | None:
        """The next offset read from ``partition`` (past transaction markers; None: not known
        yet)."""
        ...

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark as of the last fetch (None: not known)."""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a poll's records are turned into rows and written.

    Why: a poll is tens of thousands of message objects and row tuples, all alive until the
    write, so the collector ran again and again over them (and over everything older they
    were promoted past): 14 % of a librdkafka restore's thread in a native profile, and ~10 %
    more records/s without it. Reference counting still frees them; the collector runs again
    after (it was only paused if it was on)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def batch_of(records: list[Any]) -> ChangelogBatch:
    """aiokafka's ``ConsumerRecord`` s (or anything with ``key``, ``value``, ``timestamp``,
    ``offset``) as one batch."""
    rows = [(r.key, r.value, r.timestamp) for r in records]
    size = sum(len(k or b"") + len(v or b"") for k, v, _ts in rows)
    return ChangelogBatch(rows, records[-1].offset + 1, size)


class AiokafkaRestoreConsumer:
    """aiokafka's consumer behind :class:`RestoreConsumer` (the aiokafka data path)."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer

    async def start(self) -> None:
        await self.consumer.start()

    async def stop(self) -> None:
        await kafka_adapter.stop_consumer(self.consumer, "restore consumer")

    async def end_offsets(self, partitions: list[KafkaTP]) -> dict[KafkaTP, int]:
        ends: dict[KafkaTP, int] = await self.consumer.end_offsets(partitions)
        return ends

    async def assign_at(self, positions: Mapping[TopicPartition, int | None]) -> None:
        await assign_at(self.consumer, {KafkaTP(*tp): at for tp, at in positions.items()})

    def assignment(self) -> Set[TopicPartition]:
        assigned = self.consumer.assignment()
        return frozenset(TopicPartition(tp.topic, tp.partition) for tp in assigned)

    async def fetch(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, ChangelogBatch]:
        fetched = await self.consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        return {
            TopicPartition(tp.topic, tp.partition): batch_of(records)
            for tp, records in fetched.items()
            if records
        }

    async def position(self, partition: TopicPartition) -> int | None:
        position: int = await self.consumer.position(KafkaTP(*partition))
        return position

    def highwater(self, partition: TopicPartition) -> int | None:
        high: int | None = self.consumer.highwater(KafkaTP(*partition))
        return high
