"""Batch reads through Spark against the real embedded broker."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic, produce_acked

pytestmark = pytest.mark.spark


def read(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    reader = spark.read.format("streamrt").option("bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def rows_of(df: DataFrame) -> list[tuple[int, int, bytes | None, bytes]]:
    return sorted(
        (r.partition, r.offset, r.key, r.value)
        for r in df.select("partition", "offset", "key", "value").collect()
    )


def test_reads_exactly_what_was_produced(
    spark: SparkSession, broker: BrokerThread, topic_name: str
) -> None:
    create_topic(broker.bootstrap, topic_name, 3)
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(60)]
    produced = produce_acked(broker.bootstrap, topic_name, records, headers=[("src", b"test")])
    assert len({p for p, *_ in produced}) == 3  # keys spread over every partition

    df = read(spark, broker.bootstrap, subscribe=topic_name)
    assert rows_of(df) == produced
    first = df.where("offset = 0").first()
    assert first is not None
    assert (first.topic, first.timestampType) == (topic_name, 0)
    assert [(h.key, h.value) for h in first.headers] == [("src", b"test")]


def test_offset_bounds_and_splitting(
    spark: SparkSession, broker: BrokerThread, topic_name: str
) -> None:
    create_topic(broker.bootstrap, topic_name, 2)
    produced = produce_acked(broker.bootstrap, topic_name, [(b"a", b"1")] * 7, partition=0)
    produced += produce_acked(broker.bootstrap, topic_name, [(b"b", b"2")] * 9, partition=1)
    df = read(
        spark,
        broker.bootstrap,
        subscribe=topic_name,
        startingOffsets=f'{{"{topic_name}":{{"0":2}}}}',
        endingOffsets=f'{{"{topic_name}":{{"1":5}}}}',
        maxRecordsPerPartition="2",
    )
    expected = [r for r in produced if (r[0] == 0 and r[1] >= 2) or (r[0] == 1 and r[1] < 5)]
    assert rows_of(df) == expected
    # Ranges [2, 7) and [0, 5) cut into pieces of at most 2 offsets: 3 + 3 tasks.
    assert df.rdd.getNumPartitions() == 6


def test_subscribe_pattern(spark: SparkSession, broker: BrokerThread, topic_name: str) -> None:
    for suffix in ("x", "y"):
        create_topic(broker.bootstrap, f"{topic_name}-{suffix}", 1)
        produce_acked(broker.bootstrap, f"{topic_name}-{suffix}", [(None, suffix.encode())])
    df = read(spark, broker.bootstrap, subscribePattern=f"{topic_name}-.*")
    assert sorted((r.topic, r.value) for r in df.collect()) == [
        (f"{topic_name}-x", b"x"),
        (f"{topic_name}-y", b"y"),
    ]


def test_unknown_topic_fails_on_the_driver(spark: SparkSession, broker: BrokerThread) -> None:
    with pytest.raises(AnalysisException, match="option subscribe: unknown topic"):
        read(spark, broker.bootstrap, subscribe="no-such-topic").collect()


def test_out_of_range_offset_names_the_partition(
    spark: SparkSession, broker: BrokerThread, topic_name: str
) -> None:
    create_topic(broker.bootstrap, topic_name, 1)
    produce_acked(broker.bootstrap, topic_name, [(None, b"v")] * 3)
    with pytest.raises(
        AnalysisException, match=f"endingOffsets: offset 99 for {topic_name}-0 is out of range"
    ):
        read(
            spark,
            broker.bootstrap,
            subscribe=topic_name,
            endingOffsets=f'{{"{topic_name}":{{"0":99}}}}',
        ).collect()


def test_unreachable_broker_names_bootstrap_servers(spark: SparkSession) -> None:
    with pytest.raises(AnalysisException, match=r"option bootstrap\.servers: cannot reach"):
        read(spark, "127.0.0.1:1", subscribe="t", metadataTimeoutMs="1000").collect()
