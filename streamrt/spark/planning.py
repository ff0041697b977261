"""Splitting offset ranges into Spark input partitions: one per topic-partition, large ones cut.

A task reads one contiguous range with its own consumer, so cutting a big partition into
``maxRecordsPerPartition``-sized ranges lets several cores read it at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from streamrt.spark.offsets import TopicPartition

__all__ = ("OffsetRange", "plan_offset_ranges")


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Offsets ``[start, end)`` of one topic-partition: the unit a Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_offset_ranges(
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    max_records_per_partition: int,
) -> list[OffsetRange]:
    """Ranges covering ``[starts[tp], ends[tp])`` for every tp in ``ends``; empty ones dropped.

    A tp missing from ``starts`` (a partition created after the stream started) reads from 0;
    the reader's ``auto.offset.reset=earliest`` moves that up to the log start if needed.
    """
    if max_records_per_partition < 1:
        raise ValueError("max_records_per_partition must be >= 1")
    ranges: list[OffsetRange] = []
    for tp in sorted(ends):
        start, end = starts.get(tp, 0), ends[tp]
        while start < end:
            stop = min(end, start + max_records_per_partition)
            ranges.append(OffsetRange(tp.topic, tp.partition, start, stop))
            start = stop
    return ranges
