"""Per-task progress for the metadata a thread publishes: input lag, records, restoration.

Why here and not in the REST layer: the lag needs the thread's consumer (the highwater of
each input partition, as the last fetch reported it) and the restorer's pending work, both
owned by the thread. Read from another thread (REST), so every read is of a copy and a
partition the consumer no longer holds is skipped rather than raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from streamrt.runtime.engine.restore.restore import ChangelogRestorer
from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.topic_partition import TopicPartition

__all__ = ("Highwaters", "partition_lags", "task_progress")


class Highwaters(Protocol):
    """What the lag needs of the group consumer: each partition's end as the last fetch saw it."""

    def highwater(self, partition: TopicPartition) -> int | None: ...


def _highwater(consumer: Highwaters, topic: str, partition: int) -> int | None:
    try:
        value = consumer.highwater(TopicPartition(topic, partition))
    except (AssertionError, KeyError, AttributeError):  # not (or no longer) assigned
        return None
    return None if value is None else int(value)


def _lag(task: StreamTask, consumer: Highwaters | None) -> int | None:
    """Records behind over the task's inputs; None until each input was fetched and read."""
    if consumer is None:
        return None
    positions = dict(task.positions)
    total = 0
    for tp in task.inputs:
        end = _highwater(consumer, tp.topic, tp.partition)
        position = positions.get(tp)
        if end is None or position is None:
            return None
        total += max(end - position, 0)
    return total


def partition_lags(
    tasks: Mapping[str, StreamTask], consumer: Highwaters
) -> dict[tuple[str, int], int]:
    """Records behind per input partition (``records-lag``), of the partitions read so far."""
    out: dict[tuple[str, int], int] = {}
    for task in tasks.values():
        positions = dict(task.positions)
        for tp in task.inputs:
            end, position = _highwater(consumer, tp.topic, tp.partition), positions.get(tp)
            if end is not None and position is not None:
                out[(tp.topic, tp.partition)] = max(end - position, 0)
    return out


def task_progress(
    tasks: Mapping[str, StreamTask],
    consumer: Highwaters | None,
    restorer: ChangelogRestorer | None,
) -> dict[str, Any]:
    """``task_lags``, ``task_records`` and ``restore_progress`` of :class:`ThreadMetadata`."""
    lags: dict[str, int] = {}
    for task_id, task in tasks.items():
        lag = _lag(task, consumer)
        if lag is not None:
            lags[task_id] = lag
    return {
        "task_lags": lags,
        "task_records": {task_id: task.records_processed for task_id, task in tasks.items()},
        "restore_progress": restorer.progress() if restorer is not None else {},
    }
