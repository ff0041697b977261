"""RestoreConsumer: what restoration and standbys use of a thread's restore consumer.

Why an interface: :class:`~streamrt.runtime.engine.restore.restore.ChangelogRestorer` and
:class:`~streamrt.runtime.engine.restore.standby.StandbyUpdater` see only these methods,
implemented by librdkafka's
:class:`~streamrt.runtime.engine.clients.rdkafka_restore.LibrdkafkaRestoreConsumer` (the fetch and
the record decoding run in C on librdkafka's threads while the stream thread writes the previous
batch into RocksDB). It reads no group and commits nothing: partitions are assigned at the offsets
the stores hold (``None``: the changelog's start).

A fetch hands over :class:`ChangelogBatch` es: the records' key and value bytes as the broker
sent them plus their timestamps, exactly what ``StateManager.restore_batch`` writes, and the
offset after the batch. Nothing is deserialized.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator, Mapping, Set
from typing import NamedTuple, Protocol

from streamrt.topic_partition import TopicPartition

__all__ = (
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

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]: ...


class RestoreConsumer(EndOffsets, Protocol):
    """A fetching consumer over changelog partitions, no group."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def look_up(self, topics: Iterable[str]) -> None:
        """Learn ``topics``' metadata ahead of their first assignment (beside the join)."""

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
