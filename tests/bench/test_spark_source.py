"""bench/spark_source.py at a tiny size: the direct read and Spark's read through the
``streamrt`` source (and Spark's own Kafka source when its jars can be had) each see every
record (the script raises on a count that differs)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = [
    pytest.mark.slow,
    pytest.mark.spark,
    pytest.mark.skipif(
        importlib.util.find_spec("pyspark") is None or shutil.which("java") is None,
        reason="needs pyspark (the spark extra) and java",
    ),
]


def test_spark_source_reads_every_record(tmp_path: Path) -> None:
    printed = run_bench(
        "spark_source.py", "--records", "2000", "--partitions", "1", cwd=tmp_path, timeout=300
    )
    assert "ratio spark/direct" in printed
    assert "spark.read.format('kafka')" in printed  # measured, or skipped with the reason
