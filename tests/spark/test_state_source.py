"""The streamrt-state data source through Spark, over stores written by RocksDBStore."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from tests.spark.test_state_store_files import write_store

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
