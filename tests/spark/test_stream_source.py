"""Streaming reads and writes through Spark against the real embedded broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic, produce_acked

pytestmark = pytest.mark.spark


def run_available_now(spark: SparkSession, bootstrap: str, topic: str, checkpoint: Path) -> list:
    """One availableNow run of a query; returns the (partition, offset, value) rows it saw."""
    seen: list[tuple[int, int, bytes]] = []

    def collect(batch: DataFrame, batch_id: int) -> None:
        seen.extend((r.partition, r.offset, r.value) for r in batch.collect())

    stream = (
        spark.readStream.format("streamrt")
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "4")
        .load()
    )
    query = (
        stream.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    return sorted(seen)


def test_available_now_resumes_from_checkpoint(
    spark: SparkSession, broker: BrokerThread, topic_name: str, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, topic_name, 2)
    first = produce_acked(
        broker.bootstrap, topic_name, [(f"k{i}".encode(), b"old") for i in range(6)]
    )
    checkpoint = tmp_path / "checkpoint"

    assert run_available_now(spark, broker.bootstrap, topic_name, checkpoint) == [
        (p, o, v) for p, o, _, v in first
    ]
    second = produce_acked(
        broker.bootstrap, topic_name, [(f"k{i}".encode(), b"new") for i in range(5)]
    )
    assert run_available_now(spark, broker.bootstrap, topic_name, checkpoint) == [
        (p, o, v) for p, o, _, v in second
    ]


def read_values(spark: SparkSession, bootstrap: str, topic: str) -> list[tuple]:
    df = (
        spark.read.format("streamrt")
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    rows = [
        (r.key, r.value, r.partition, [(h.key, h.value) for h in r.headers or []])
        for r in df.collect()
    ]
    return sorted(rows, key=lambda row: row[1])  # by value: keys may be null


def test_write_then_read_back(spark: SparkSession, broker: BrokerThread, topic_name: str) -> None:
    create_topic(broker.bootstrap, topic_name, 2)
    df = spark.createDataFrame(
        [("a", "1", 0), ("b", "2", 1), (None, "3", 1)], "key string, value string, partition int"
    ).selectExpr(
        "key",
        "value",
        "partition",
        "array(named_struct('key', 'h', 'value', cast(key as binary))) as headers",
    )
    df.write.format("streamrt").option("bootstrap.servers", broker.bootstrap).option(
        "topic", topic_name
    ).mode("append").save()
    assert read_values(spark, broker.bootstrap, topic_name) == [
        (b"a", b"1", 0, [("h", b"a")]),
        (b"b", b"2", 1, [("h", b"b")]),
        (None, b"3", 1, [("h", None)]),
    ]


def test_topic_column_routes_rows(
    spark: SparkSession, broker: BrokerThread, topic_name: str
) -> None:
    for suffix in ("x", "y"):
        create_topic(broker.bootstrap, f"{topic_name}-{suffix}", 1)
    df = spark.createDataFrame(
        [(f"{topic_name}-x", b"1"), (f"{topic_name}-y", b"2")], "topic string, value binary"
    )
    df.write.format("streamrt").option("bootstrap.servers", broker.bootstrap).mode("append").save()
    assert read_values(spark, broker.bootstrap, f"{topic_name}-y") == [(None, b"2", 0, [])]


def test_streaming_write_copies_a_topic(
    spark: SparkSession, broker: BrokerThread, topic_name: str, tmp_path: Path
) -> None:
    source, sink = f"{topic_name}-in", f"{topic_name}-out"
    create_topic(broker.bootstrap, source, 2)
    create_topic(broker.bootstrap, sink, 1)
    produce_acked(
        broker.bootstrap, source, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(8)]
    )
    query = (
        spark.readStream.format("streamrt")
        .option("bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "upper(cast(value as string)) as value")
        .writeStream.format("streamrt")
        .option("bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert [(k, v) for k, v, _, _ in read_values(spark, broker.bootstrap, sink)] == [
        (f"k{i}".encode(), f"V{i}".encode()) for i in range(8)
    ]
