"""Spark's own Kafka source (spark-sql-kafka-0-10 from Maven Central) against ``streamrt``'s:
the same topic gives the same rows, on the embedded broker and on Apache Kafka."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.kafka_helpers import create_topic, produce_acked

pytestmark = pytest.mark.spark

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")


def rows(spark: SparkSession, fmt: str, bootstrap: str, topic: str) -> list[tuple]:
    option = "kafka.bootstrap.servers" if fmt == "kafka" else "bootstrap.servers"
    df = (
        spark.read.format(fmt)
        .option(option, bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    return sorted((tuple(r) for r in df.select(*COLUMNS).collect()), key=lambda r: (r[3], r[4]))


def test_native_kafka_source_reads_the_same_rows_as_streamrt(
    spark: SparkSession, kafka_connector: str, any_broker, topic_name: str
) -> None:
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(90)]
    records += [(None, b"no key"), (b"no value", None)]
    produced = produce_acked(bootstrap, topic_name, records)
    assert len({p for p, *_ in produced}) == 3

    native = rows(spark, "kafka", bootstrap, topic_name)
    ours = rows(spark, "streamrt", bootstrap, topic_name)
    assert len(native) == len(records)
    assert ours == native
    assert {(r[0], r[1]) for r in native} == set(records)
    assert {r[2] for r in native} == {topic_name}
