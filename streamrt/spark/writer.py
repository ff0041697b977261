"""Batch and streaming writers of the ``streamrt`` data source (Spark's Kafka-sink columns).

Input columns: ``value`` (binary or string, required; null is a tombstone), ``key``,
``topic`` (used when the ``topic`` option is absent), ``partition`` and ``headers``, all
optional. Delivery is at-least-once: a retried Spark task produces its rows again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import confluent_kafka as ck
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from streamrt.errors import ConfigError, StreamrtError
from streamrt.spark import kafka_client
from streamrt.spark.options import SinkOptions

__all__ = ("KafkaWriteError", "StreamrtBatchWriter", "StreamrtStreamWriter", "WriteResult")

_BYTES_TYPES = (BinaryType, StringType)


class KafkaWriteError(StreamrtError):
    """A record was not delivered; the message names the topic-partition and the cause."""


@dataclass
class WriteResult(WriterCommitMessage):
    records: int


def validate_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Reject a DataFrame the sink cannot write, on the driver, naming the column or option."""
    types: dict[str, DataType] = {f.name: f.dataType for f in schema.fields}
    if "value" not in types:
        raise ConfigError("the DataFrame needs a 'value' column (binary or string)")
    for name in ("key", "value"):
        if name in types and not isinstance(types[name], _BYTES_TYPES):
            raise ConfigError(f"column {name} must be binary or string, got {types[name]}")
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise ConfigError(f"column topic must be a string, got {types['topic']}")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise ConfigError(f"column partition must be an int, got {types['partition']}")
    if "headers" in types:
        headers = types["headers"]
        element = headers.elementType if isinstance(headers, ArrayType) else None
        if not (
            isinstance(element, StructType)
            and [f.name for f in element.fields] == ["key", "value"]
            and isinstance(element.fields[0].dataType, StringType)
            and isinstance(element.fields[1].dataType, _BYTES_TYPES)
        ):
            raise ConfigError(
                "column headers must be array<struct<key string, value binary>>, "
                f"got {headers.simpleString()}"
            )
    if options.topic is None and "topic" not in types:
        raise ConfigError("set the option topic or give the DataFrame a 'topic' column")
    if options.topic is not None:
        _check_topic(options, options.topic)


def _check_topic(options: SinkOptions, topic: str) -> None:
    producer = kafka_client.open_producer(options.client)
    try:
        exists = kafka_client.topic_exists(
            producer,
            options.client["bootstrap.servers"],
            topic,
            options.metadata_timeout_ms / 1000,
            secured=kafka_client.is_secured(options.client),
        )
    finally:
        producer.flush(0)
    if not exists:
        raise ConfigError(f"option topic: unknown topic {topic!r}")


def _as_bytes(values: Sequence[Any]) -> list[bytes | None]:
    return [v.encode() if isinstance(v, str) else v for v in values]


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    index = batch.schema.get_field_index(name)
    return None if index < 0 else batch.column(index).to_pylist()


def produce_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Produce every row, wait for all deliveries, and raise on the first failed one."""
    producer = kafka_client.open_producer(options.client)
    failures: list[str] = []

    def on_delivery(error: ck.KafkaError | None, message: ck.Message) -> None:
        if error is not None and len(failures) < 5:
            failures.append(f"{message.topic()}-{message.partition()}: {error.str()}")

    count = 0
    for batch in batches:
        n = batch.num_rows
        values = _as_bytes(_column(batch, "value") or [None] * n)
        keys = _as_bytes(_column(batch, "key") or [None] * n)
        topics = [options.topic] * n if options.topic else _column(batch, "topic") or [None] * n
        partitions = _column(batch, "partition") or [None] * n
        headers = _column(batch, "headers") or [None] * n
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise KafkaWriteError("row has a null topic and no topic option is set")
            kwargs: dict[str, Any] = {"key": keys[i], "value": values[i]}
            if partitions[i] is not None:
                kwargs["partition"] = partitions[i]
            if headers[i]:
                kwargs["headers"] = [
                    (h["key"], h["value"].encode() if isinstance(h["value"], str) else h["value"])
                    for h in headers[i]
                ]
            while True:
                try:
                    producer.produce(topic, on_delivery=on_delivery, **kwargs)
                    break
                except BufferError:  # local queue full: serve callbacks, then retry
                    producer.poll(0.05)
            count += 1
        producer.poll(0)
    remaining = producer.flush(float(options.client.get("message.timeout.ms", 30_000)) / 1000 + 5)
    if failures or remaining:
        detail = "; ".join(failures) or f"{remaining} record(s) still queued"
        raise KafkaWriteError(f"writing to {options.client['bootstrap.servers']} failed: {detail}")
    return count


class StreamrtBatchWriter(DataSourceArrowWriter):
    """``df.write.format("streamrt")``: each task produces its rows and waits for the acks."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        validate_sink_schema(schema, options)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return WriteResult(produce_batches(self.options, iterator))


class StreamrtStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("streamrt")``: a micro-batch is done when its records are acked."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        validate_sink_schema(schema, options)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return WriteResult(produce_batches(self.options, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: records were acknowledged by Kafka inside ``write``."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: Kafka has no rollback without transactions (at-least-once)."""
