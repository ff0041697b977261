"""Spark jobs behind ``streamrt report``: each takes a session and returns plain rows."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

__all__ = ("topic_stats",)


def topic_stats(spark: SparkSession, bootstrap_servers: str, topic: str) -> list[dict[str, Any]]:
    """Per-partition record count, offset range, time range, null keys and value bytes.

    Reads the whole topic (earliest to latest) through the ``streamrt`` data source; a count
    below ``last_offset - first_offset + 1`` means compaction or transaction markers.
    """
    records = (
        spark.read.format("streamrt")
        .option("bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .load()
    )
    stats = (
        records.groupBy("partition")
        .agg(
            F.count("*").alias("records"),
            F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset"),
            F.min("timestamp").alias("first_timestamp"),
            F.max("timestamp").alias("last_timestamp"),
            F.sum(F.col("key").isNull().cast("long")).alias("null_keys"),
            F.sum(F.coalesce(F.length("value"), F.lit(0))).alias("value_bytes"),
        )
        .orderBy("partition")
    )
    return [row.asDict() for row in stats.collect()]
