"""The streamrt-state data source through Spark, over stores written by RocksDBStore and by a
running app's aggregate."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.types import TimestampType

from streamrt.broker.embedded import BrokerThread
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until
from tests.spark.test_state_store_files import write_store, write_timestamped_store

pytestmark = pytest.mark.spark


def test_state_reader_returns_what_was_stored(spark: SparkSession, tmp_path: Path) -> None:
    write_store(tmp_path, "0_0", {b"a": b"1", b"b": b"2"})
    write_store(tmp_path, "0_1", {b"c": b"3"})
    df = (
        spark.read.format("streamrt-state")
        .option("state.dir", str(tmp_path))
        .option("application.id", "app")
        .option("store", "counts")
        .load()
    )
    assert sorted(tuple(r) for r in df.collect()) == [
        ("0_0", 0, b"a", b"1"),
        ("0_0", 0, b"b", b"2"),
        ("0_1", 1, b"c", b"3"),
    ]


def test_unknown_store_fails_naming_the_option(spark: SparkSession, tmp_path: Path) -> None:
    write_store(tmp_path, "0_0", {b"a": b"1"})
    reader = (
        spark.read.format("streamrt-state")
        .option("state.dir", str(tmp_path))
        .option("application.id", "app")
        .option("store", "missing")
    )
    with pytest.raises(AnalysisException, match="option store: no task directory"):
        reader.load().collect()


def test_app_count_store_reads_as_values_with_row_timestamps(
    spark: SparkSession, broker: BrokerThread, tmp_path: Path
) -> None:
    """A count's store is timestamped: Spark gets the plain count and the row timestamp (the
    newest of the key's records), not the 8-byte prefix."""
    # 1970 timestamps: keep them (else time-based retention may delete them before the app reads)
    create_topic(broker.bootstrap, "clicks", 2, **{"retention.ms": "-1"})
    create_topic(broker.bootstrap, "click-counts", 2, **{"retention.ms": "-1"})
    clicks = [(b"u", 1_000, 0), (b"v", 2_000, 1), (b"u", 5_000, 0), (b"u", 3_000, 0)]
    produce(
        broker.bootstrap,
        "clicks",
        [(key, b"x") for key, _, _ in clicks],
        timestamps=[ts for _, ts, _ in clicks],
        partitions=[p for _, _, p in clicks],
    )
    app = App(
        {
            "application.id": "clicks-app",
            "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path),
            "commit.interval.ms": "200",
        }
    )
    app.stream("clicks", key_serde="str").group_by_key().count(store="counts").to_stream().to(
        "click-counts", value_serde="int"
    )
    app.start()
    try:
        wait_until(
            lambda: (
                latest_by_key(read_all(broker.bootstrap, "click-counts"))
                == {b"u": struct.pack(">q", 3), b"v": struct.pack(">q", 1)}
            ),
            what="click counts",
        )
    finally:
        app.stop()
    assert app.fatal_error is None
    df = (
        spark.read.format("streamrt-state")
        .option("state.dir", str(tmp_path))
        .option("application.id", "clicks-app")
        .option("store", "counts")
        .load()
    )
    assert df.columns == ["task_id", "partition", "key", "value", "timestamp"]
    assert df.schema["timestamp"].dataType == TimestampType()  # as the Kafka source's
    rows = df.selectExpr("partition", "key", "value", "unix_millis(timestamp)")
    assert sorted(tuple(r) for r in rows.collect()) == [
        (0, b"u", struct.pack(">q", 3), 5_000),
        (1, b"v", struct.pack(">q", 1), 2_000),
    ]


def test_mid_upgrade_store_has_timestamps_only_where_marked(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_store(tmp_path, "0_0", {b"a": b"1"})  # a task the new version has not opened yet
    write_timestamped_store(tmp_path, "0_1", [(b"b", b"2", 7_000)])
    df = (
        spark.read.format("streamrt-state")
        .option("state.dir", str(tmp_path))
        .option("application.id", "app")
        .option("store", "counts")
        .load()
        .selectExpr("task_id", "key", "value", "unix_millis(timestamp)")
    )
    assert sorted(tuple(r) for r in df.collect()) == [
        ("0_0", b"a", b"1", None),
        ("0_1", b"b", b"2", 7_000),
    ]
