"""Batch and streaming readers of the ``streamrt`` data source.

Planning (metadata, watermarks, offset resolution) happens on the driver so bad options fail
before any task starts. ``read()`` runs in executor workers on a pickled copy of the reader:
it opens its own consumer and reads exactly one :class:`OffsetRange`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from streamrt.errors import ConfigError
from streamrt.spark import kafka_client
from streamrt.spark.arrow import batch_from_messages
from streamrt.spark.offsets import (
    TopicPartition,
    Watermarks,
    offsets_from_json,
    offsets_to_json,
    resolve_offsets,
)
from streamrt.spark.options import SourceOptions
from streamrt.spark.planning import OffsetRange, plan_offset_ranges

__all__ = ("StreamrtBatchReader", "StreamrtStreamReader", "cap_offsets", "read_offset_range")


def read_offset_range(
    options: SourceOptions, partition: InputPartition
) -> Iterator[pa.RecordBatch]:
    """Stream one range as Arrow batches of at most ``batchSize`` rows."""
    assert isinstance(partition, OffsetRange), partition
    chunks = kafka_client.consume_range(
        options.client,
        partition.topic_partition,
        partition.start,
        partition.end,
        options.poll_timeout_ms,
    )
    for messages in chunks:
        for i in range(0, len(messages), options.batch_size):
            yield batch_from_messages(
                partition.topic, partition.partition, messages[i : i + options.batch_size]
            )


def _current_watermarks(options: SourceOptions) -> dict[TopicPartition, Watermarks]:
    timeout_s = options.metadata_timeout_ms / 1000
    consumer = kafka_client.open_consumer(options.client)
    try:
        partitions = kafka_client.list_partitions(
            consumer,
            options.client["bootstrap.servers"],
            options.subscription,
            timeout_s,
            secured=kafka_client.is_secured(options.client),
        )
        return kafka_client.watermarks(consumer, partitions, timeout_s)
    finally:
        consumer.close()


class StreamrtBatchReader(DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` of each subscribed partition (fixed at plan)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        marks = _current_watermarks(options)
        starts = resolve_offsets(options.starting, marks)
        ends = resolve_offsets(options.ending, marks)
        for tp in sorted(ends):
            if starts[tp] > ends[tp]:
                raise ConfigError(
                    f"options startingOffsets/endingOffsets: start {starts[tp]} is after "
                    f"end {ends[tp]} for {tp}"
                )
        self.ranges = plan_offset_ranges(starts, ends, options.max_records_per_partition)

    def partitions(self) -> list[InputPartition]:
        return list(self.ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_offset_range(self.options, partition)


def cap_offsets(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int
) -> dict[TopicPartition, int]:
    """Advance at most ``max_rows`` offsets in total, shared by each partition's backlog.

    Mirrors Spark's Kafka ``maxOffsetsPerTrigger``: a partition gets ``max_rows * backlog /
    total`` (at least one offset if it has a backlog, so no partition starves).
    """
    backlog = {tp: max(0, end - start.get(tp, 0)) for tp, end in latest.items()}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    out: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = start.get(tp, 0)
        share = backlog[tp] * max_rows // total
        if backlog[tp]:
            share = max(1, share)
        out[tp] = min(end, begin + share)
    return out


class StreamrtStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. Offsets are ``{"topic": {"partition": next offset}}``.

    Driver-side methods run in one long-lived Python process, so ``_target`` (the availableNow
    goal) survives between batches. ``commit()`` does nothing: the query's checkpoint, not
    Kafka, is the source of truth (Spark commits one batch late, see docs/spark.md).
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._target: dict[TopicPartition, int] | None = None
        # Fail on the driver at start: unknown topics, unreachable broker, bad JSON offsets.
        self._initial = offsets_to_json(
            resolve_offsets(options.starting, _current_watermarks(options))
        )

    def initialOffset(self) -> dict[str, Any]:
        return self._initial

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {tp: m.high for tp, m in _current_watermarks(self.options).items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offsets_from_json(start)
        if self._target is not None:
            latest = dict(self._target)
        else:
            latest = {tp: m.high for tp, m in _current_watermarks(self.options).items()}
        # Never move a partition backwards (e.g. it vanished from metadata for a moment).
        for tp, offset in begin.items():
            latest[tp] = max(latest.get(tp, offset), offset)
        if isinstance(limit, ReadMaxRows):
            latest = cap_offsets(begin, latest, limit.max_rows)
        return offsets_to_json(latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        return list(
            plan_offset_ranges(
                offsets_from_json(start),
                offsets_from_json(end),
                self.options.max_records_per_partition,
            )
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_offset_range(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, not in a consumer group."""
