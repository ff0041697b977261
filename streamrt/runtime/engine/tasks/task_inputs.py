"""A stream thread's buffered input: one :class:`PartitionGroup` per open task.

Each poll's records go to their task's group; a task then processes records in head-timestamp
order for as long as ``max.task.idle.ms`` lets it (see :mod:`.partition_group`). Whether an
empty partition has more data on the broker comes from a :data:`LagReader` (the consumer's
last fetch: high watermark, or last stable offset under read_committed, minus its position).

An open task takes each partition's records in offset order, each once: its state holds (or
has staged) the effects of every record it took, so a record at or below one it took would be
counted twice. The consumer only goes back for a task that was closed and opened again (a lost
transaction rewinds to the committed offsets), which starts the task's count afresh. Records
that come again anyway are dropped with a warning naming the task, the partition and the
offsets: a consumer that went back without a reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from streamrt.logs import fields
from streamrt.runtime.engine.main_consumer import MainConsumer
from streamrt.runtime.engine.tasks.partition_group import MAX_TASK_IDLE_DISABLED, PartitionGroup
from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.topic_partition import TopicPartition

__all__ = ("ConsumerLags", "LagReader", "TaskInputs", "caught_up")

logger = logging.getLogger(__name__)

#: ``lag(partition)``: records on the broker past the consumer's position (None: not known).
LagReader = Callable[[TopicPartition], Awaitable[int | None]]


#: how often (in records) a processing run asks whether the thread is stopping
STOP_CHECK_RECORDS = 32


def _never() -> bool:
    return False


async def caught_up(partition: TopicPartition) -> int | None:
    """A lag reader for consumers that say nothing: every partition caught up (as Kafka's
    MockConsumer, which its TopologyTestDriver uses)."""
    del partition
    return 0


class ConsumerLags:
    """The lag the consumer's last fetch reported for a partition (Kafka's
    ``ConsumerRecords.Metadata.lag()``): its end (the high watermark, or the last stable
    offset under read_committed) minus its position; None before the first fetch."""

    def __init__(self, consumer: MainConsumer, read_committed: bool) -> None:
        self.consumer = consumer
        self.read_committed = read_committed

    async def __call__(self, partition: TopicPartition) -> int | None:
        consumer = self.consumer
        end = (
            consumer.last_stable_offset(partition)
            if self.read_committed
            else consumer.highwater(partition)
        )
        if end is None:
            return None
        try:  # no wait when the position is known (a fetched partition); never block the loop
            position: int = await asyncio.wait_for(consumer.position(partition), 0.05)
        except (TimeoutError, LookupError):  # LookupError: librdkafka's
            return None
        lag: int = max(0, end - position)
        return lag


class TaskInputs:
    """Responsibilities: buffer each open task's polled records in its PartitionGroup, read
    the lags of its empty partitions, and run records through the task in group order."""

    def __init__(self, max_task_idle_ms: int, lags: LagReader = caught_up) -> None:
        self.max_task_idle_ms = max_task_idle_ms
        self.lags = lags
        self._groups: dict[str, tuple[StreamTask, PartitionGroup[TopicPartition]]] = {}
        # task id -> partition -> the offset after the last record the open task took
        self._taken: dict[str, dict[TopicPartition, int]] = {}
        self.records_taken_again = 0  # dropped: see the module docstring

    def open(self, task: StreamTask) -> None:
        """The task takes records from now on (its stores are restored)."""
        extractors = {tp: task.head_extractor(tp.topic) for tp in task.inputs}
        group = PartitionGroup(extractors, self.max_task_idle_ms)
        task_id = str(task.task_id)
        self._groups[task_id] = (task, group)
        self._taken[task_id] = {}

    def close(self, task_id: str) -> None:
        """Drop the task's buffered records: not processed, so not committed; whoever owns the
        partitions next reads them again from the committed offsets."""
        entry = self._groups.pop(task_id, None)
        if entry is not None:
            entry[1].clear()
        self._taken.pop(task_id, None)

    def add(self, task: StreamTask, partition: TopicPartition, records: list[Any]) -> bool:
        """Buffer polled records; False if the task takes no records (not open here)."""
        task_id = str(task.task_id)
        entry = self._groups.get(task_id)
        if entry is None or entry[0] is not task:
            return False
        taken_of = self._taken[task_id]
        taken = taken_of.get(partition)
        if taken is not None and records and records[0].offset < taken:
            records = self._drop_taken(task_id, partition, records, taken)
        if records:
            taken_of[partition] = records[-1].offset + 1
            entry[1].add(partition, records)
        return True

    def _drop_taken(
        self, task_id: str, partition: TopicPartition, records: list[Any], taken: int
    ) -> list[Any]:
        fresh = [r for r in records if r.offset >= taken]
        self.records_taken_again += len(records) - len(fresh)
        logger.warning(
            "input went back: records the task already took are dropped",
            extra=fields(
                task=task_id,
                partition=f"{partition.topic}-{partition.partition}",
                taken_up_to=taken,
                first_offset=records[0].offset,
                dropped=len(records) - len(fresh),
            ),
        )
        return fresh

    def buffered(self, task_id: str) -> int:
        entry = self._groups.get(task_id)
        return entry[1].buffered if entry is not None else 0

    async def update_lags(self) -> None:
        """Read the fetched lag of each input partition of a task with several inputs and
        records waiting: a partition that is or becomes empty decides by it whether the task
        waits (one input never waits; with -1 nothing waits, so nothing is read)."""
        if self.max_task_idle_ms == MAX_TASK_IDLE_DISABLED:
            return
        for _, group in self._groups.values():
            if group.buffered and len(group.queues) > 1:
                for partition in group.queues:
                    group.set_lag(partition, await self.lags(partition))

    def process(self, now_ms: int, stopping: Callable[[], bool] = _never) -> int:
        """Run every ready task's buffered records in group order; returns how many ran.

        ``stopping`` is asked every :data:`STOP_CHECK_RECORDS` records: once it says yes the
        rest stays buffered (each task's offsets are those of the records it processed, so
        the stop's commit covers exactly those), and a stop or hand-off does not wait for a
        whole poll's worth of a heavy topology. A RecordFailedError (the handler said FAIL)
        propagates and ends the thread.
        """
        processed = 0
        for task, group in self._groups.values():
            if group.own_time_single:  # the usual case: one input, the records' own time
                count, stopped = _run_all(task, group, processed, stopping)
                processed += count
                if stopped:
                    return processed
                continue
            if group.single is not None:  # one input: offset order, never waits
                for r, ts in group.drain_single():
                    task.process(r.topic, r.offset, r.timestamp, r.key, r.value, r.headers, ts)
                    processed += 1
                    if not processed % STOP_CHECK_RECORDS and stopping():
                        return processed
                continue
            while group.ready(now_ms):
                taken = group.next_record()
                if taken is None:
                    break
                _, r, ts = taken
                task.process(r.topic, r.offset, r.timestamp, r.key, r.value, r.headers, ts)
                processed += 1
                if not processed % STOP_CHECK_RECORDS and stopping():
                    return processed
        return processed


def _run_all(
    task: StreamTask,
    group: PartitionGroup[TopicPartition],
    before: int,
    stopping: Callable[[], bool],
) -> tuple[int, bool]:
    """Run a one-partition, own-timestamp group's records through the task from one list
    (no per-record queue work); returns how many ran and whether ``stopping`` said stop.
    What did not run goes back to the group (a raising record counts as taken, as a record
    the task failed on is not offered again)."""
    records = group.take_all()
    count = 0
    try:
        for r in records:
            count += 1
            task.process(r.topic, r.offset, r.timestamp, r.key, r.value, r.headers)
            if not (before + count) % STOP_CHECK_RECORDS and stopping():
                return count, True
    finally:
        group.taken(records, count)
    return count, False
