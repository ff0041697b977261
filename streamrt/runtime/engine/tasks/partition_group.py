"""PartitionGroup: which buffered input record a task processes next (Kafka's PartitionGroup).

A task reads several input partitions (the same partition number of each of its source topics).
Their records are buffered per partition, in offset order, and the next record is taken from
the partition whose head has the smallest timestamp, so a join fed from two topics sees its
inputs in time order on a real broker as in the test driver.

Whether a task may process at all follows ``max.task.idle.ms`` (Kafka Streams'
``PartitionGroup.readyToProcess``): with every partition buffered it may; with ``-1`` it
always may; otherwise an empty partition whose fetched lag is unknown or positive makes the
task wait (the data is on the broker, wait for the fetch), and one with zero lag makes it wait
until ``max.task.idle.ms`` after it was first seen empty (0: not at all), then processing is
enforced. A record's timestamp for the ordering is its own, or what the task's custom
extractor gives it (``head_extractor``); stream time is the largest timestamp taken out.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import operator
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from streamrt.runtime.graph.topology import SourceNode
from streamrt.runtime.timestamps import (
    ConsumedRecord,
    TimestampExtractor,
    fail_on_invalid_timestamp,
    log_and_skip_on_invalid_timestamp,
    use_partition_time_on_invalid_timestamp,
)

__all__ = (
    "MAX_TASK_IDLE_DISABLED",
    "PartitionGroup",
    "RecordQueue",
    "TimestampOf",
    "head_extractor",
)

logger = logging.getLogger(__name__)

#: ``max.task.idle.ms=-1``: never wait for empty partitions.
MAX_TASK_IDLE_DISABLED = -1

P = TypeVar("P")  # a partition key (a TopicPartition, or a topic name in the driver)


#: ``timestamp_of(record, partition_time)``: a custom extractor's timestamp for the record, or
#: None when it failed (the record is ordered by its own timestamp and the task's process()
#: meets the failure again, to handle it as configured). A partition without one (None) is
#: ordered by the records' own timestamps and process() runs the built-in extractor.
TimestampOf = Callable[[Any, int], "int | None"]


class RecordQueue:
    """One input partition's buffered records, oldest first. Its head's timestamp is extracted
    when the record becomes the head (Kafka's ``RecordQueue.updateHead``), with the partition
    time: the largest head timestamp so far."""

    __slots__ = ("extracted", "head_ts", "partition", "partition_time", "records", "timestamp_of")

    def __init__(self, partition: Any, timestamp_of: TimestampOf | None) -> None:
        self.partition = partition
        self.records: deque[Any] = deque()
        self.timestamp_of = timestamp_of
        self.head_ts = -1
        self.extracted: int | None = None  # the head's extracted timestamp (None: failed)
        self.partition_time = -1

    def add(self, records: Iterable[Any]) -> None:
        was_empty = not self.records
        self.records.extend(records)
        if was_empty and self.records:
            self._update_head()

    def poll(self) -> tuple[Any, int | None]:
        """The head record and its extracted timestamp; the next record becomes the head."""
        record, extracted = self.records.popleft(), self.extracted
        if self.records:
            self._update_head()
        return record, extracted

    def _update_head(self) -> None:
        head = self.records[0]
        if self.timestamp_of is None:
            self.head_ts = head.timestamp
        else:
            self.extracted = self.timestamp_of(head, self.partition_time)
            self.head_ts = head.timestamp if self.extracted is None else self.extracted
        if self.head_ts > self.partition_time:
            self.partition_time = self.head_ts

    def __len__(self) -> int:
        return len(self.records)


class PartitionGroup(Generic[P]):
    """Responsibilities: buffer a task's input records per partition, pick the next one by
    head timestamp, and say whether the task may process now (``max.task.idle.ms``)."""

    def __init__(
        self, extractors: Mapping[P, TimestampOf | None], max_task_idle_ms: int = 0
    ) -> None:
        """``extractors``: each partition's head extractor (None: the records' own time)."""
        self.queues: dict[P, RecordQueue] = {p: RecordQueue(p, f) for p, f in extractors.items()}
        # one partition: never waits, no order to choose (the thread's usual case)
        self.single = next(iter(self.queues.values())) if len(self.queues) == 1 else None
        self.max_task_idle_ms = max_task_idle_ms
        self.stream_time = -1  # largest timestamp taken out
        self.enforced_processing = 0  # Kafka's ``enforced-processing`` sensor, as a count
        self._by_time: list[tuple[int, int, RecordQueue]] = []  # non-empty queues by head ts
        self._seq = itertools.count()  # ties: the queue offered first goes first
        self._buffered = 0
        self._lags: dict[P, int] = {}
        self._deadlines: dict[P, int] = {}

    @property
    def buffered(self) -> int:
        """How many records wait in all queues."""
        return self._buffered

    def add(self, partition: P, records: Iterable[Any]) -> None:
        """Buffer records fetched from ``partition`` (offset order)."""
        queue = self.queues[partition]
        before = len(queue)
        queue.add(records)
        added = len(queue) - before
        if added and before == 0:
            heapq.heappush(self._by_time, (queue.head_ts, next(self._seq), queue))
        self._buffered += added

    def set_lag(self, partition: P, lag: int | None) -> None:
        """What the last fetch said is left on the broker past the consumer's position
        (``None``: not known, the partition must be fetched first)."""
        if lag is None:
            self._lags.pop(partition, None)
        else:
            self._lags[partition] = lag

    def empty_partitions(self) -> list[P]:
        """The partitions with nothing buffered (their lag decides whether the task waits)."""
        return [p for p, q in self.queues.items() if not q.records]

    def next_record(self) -> tuple[P, Any, int | None] | None:
        """The head record with the smallest timestamp: its partition, the record and its
        extracted timestamp (None: extraction failed). None when nothing is buffered."""
        if not self._by_time:
            return None
        taken, _, queue = heapq.heappop(self._by_time)
        record, extracted = queue.poll()
        self._buffered -= 1
        if queue.records:
            heapq.heappush(self._by_time, (queue.head_ts, next(self._seq), queue))
        if taken > self.stream_time:
            self.stream_time = taken
        partition: P = queue.partition
        return partition, record, extracted

    def drain_single(self) -> Iterator[tuple[Any, int | None]]:
        """A one-partition group's records and extracted timestamps in offset order, with no
        ready check and no heap (one partition never waits)."""
        queue = self.single
        assert queue is not None, "drain_single needs a one-partition group"
        while queue.records:
            record, extracted = queue.poll()
            self._buffered -= 1
            ts = record.timestamp if extracted is None else extracted
            if ts > self.stream_time:
                self.stream_time = ts
            yield record, extracted
        self._by_time.clear()

    @property
    def own_time_single(self) -> bool:
        """One partition ordered by the records' own timestamps: :meth:`take_all` applies."""
        return self.single is not None and self.single.timestamp_of is None

    def take_all(self) -> list[Any]:
        """Every buffered record of an :attr:`own_time_single` group at once, in offset order,
        the group then empty: no head to extract, no order to choose, no wait, so no per-record
        queue work. :meth:`taken` says how many were processed and returns the rest."""
        queue = self.single
        assert queue is not None and queue.timestamp_of is None, "take_all: own-time single"
        records = list(queue.records)
        queue.records.clear()
        self._buffered = 0
        self._by_time.clear()
        return records

    def taken(self, records: list[Any], count: int) -> None:
        """The first ``count`` of :meth:`take_all`'s records were taken (stream time moves to
        their largest timestamp); the others go back to the head of the queue, in order."""
        if count:
            latest = max(map(_timestamp_of, records[:count]))
            if latest > self.stream_time:
                self.stream_time = latest
        if count < len(records):
            queue = self.single
            assert queue is not None
            self.add(queue.partition, records[count:])

    def ready(self, now_ms: int) -> bool:
        """May the task process now? Kafka Streams' ``readyToProcess`` (see the module doc)."""
        if not self._buffered:
            return False
        if self.max_task_idle_ms == MAX_TASK_IDLE_DISABLED:
            return True
        enforced = False
        for partition, queue in self.queues.items():
            if queue.records:
                self._deadlines.pop(partition, None)
                continue
            lag = self._lags.get(partition)
            if lag is None or lag > 0:  # wait for the fetch of what is (or may be) there
                self._deadlines.pop(partition, None)
                return False
            deadline = self._deadlines.setdefault(partition, now_ms + self.max_task_idle_ms)
            if now_ms < deadline:
                return False
            enforced = True
        if enforced:
            self.enforced_processing += 1
            logger.debug("processing with empty input partitions (max.task.idle.ms passed)")
        return True

    def clear(self) -> None:
        """Drop every buffered record (the task closes; they are read again from the
        committed offsets by whoever owns the partitions next)."""
        for queue in self.queues.values():
            queue.records.clear()
        self._by_time.clear()
        self._buffered = 0


_timestamp_of = operator.attrgetter("timestamp")

# extractors whose result is the record's own timestamp (or a stand-in for a negative one)
_RECORD_TIME_EXTRACTORS = frozenset(
    (
        fail_on_invalid_timestamp,
        log_and_skip_on_invalid_timestamp,
        use_partition_time_on_invalid_timestamp,
    )
)


def head_extractor(
    source: SourceNode, extractor: TimestampExtractor, partition: int
) -> TimestampOf | None:
    """How a partition's head timestamp is extracted (Kafka extracts it when the record
    reaches its queue's head): None for the built-ins, which return the record's own timestamp
    (process() runs them, so their checks stay there); a custom extractor sees the deserialized
    record and the partition time, and a failure there gives None (process() meets it again
    and handles it as configured)."""
    if extractor in _RECORD_TIME_EXTRACTORS:
        return None

    def extract(record: Any, partition_time: int) -> int | None:
        try:
            consumed = ConsumedRecord(
                record.topic,
                partition,
                record.offset,
                record.timestamp,
                source.key_serde.deserialize(record.key),
                source.value_serde.deserialize(record.value),
                tuple(record.headers or ()),
                partition_time,
            )
            return int(extractor(consumed))
        except Exception:
            return None

    return extract
