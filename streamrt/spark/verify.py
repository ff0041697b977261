"""Verify the sessions app (``streamrt.examples.sessions``): recompute its profiles from the
input topic.

The app folds each user's clicks, in offset order, into a profile
(``streamrt/examples/session_profiles.py``). Spark SQL recomputes the fields that follow
from the clicks alone (``clicks``, ``pages``, ``recent``, ``first_ts``,
``last_ts``; ``attributes`` is constant padding) and compares them with the latest value per
key of the output topic. Keys are compared both ways: a profile without clicks is a mismatch
as much as clicks without a profile (``actual`` or ``expected`` is then null).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from streamrt.examples.session_profiles import RECENT_PAGES

__all__ = ("RECENT_PAGES", "expected_profiles", "latest_profiles", "verify_sessions")


_CLICK_SCHEMA = "page string, ts double"
_PROFILE_SCHEMA = (
    "clicks long, pages map<string,long>, recent array<string>, first_ts double, last_ts double"
)


def _read(spark: SparkSession, bootstrap_servers: str, topic: str) -> DataFrame:
    return (
        spark.read.format("streamrt")
        .option("bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .load()
    )


def _profile(
    clicks: Column, pages: Column, recent: Column, first_ts: Column, last_ts: Column
) -> Column:
    """One comparable struct: pages as entries sorted by page (maps are not comparable)."""
    return F.struct(
        clicks.cast("long").alias("clicks"),
        F.array_sort(F.map_entries(pages)).alias("pages"),
        recent.alias("recent"),
        first_ts.alias("first_ts"),
        last_ts.alias("last_ts"),
    )


def expected_profiles(spark: SparkSession, bootstrap_servers: str, input_topic: str) -> DataFrame:
    """``key string, profile struct``: what the app should hold after every input record."""
    clicks = _read(spark, bootstrap_servers, input_topic).select(
        F.col("key").cast("string").alias("key"),
        "offset",
        F.from_json(F.col("value").cast("string"), _CLICK_SCHEMA).alias("click"),
    )
    clicks = clicks.where(F.col("key").isNotNull()).select(
        "key",
        "offset",
        F.coalesce(F.col("click.page"), F.lit("?")).alias("page"),
        F.col("click.ts").alias("ts"),
    )
    page_counts = (
        clicks.groupBy("key", "page")
        .count()
        .groupBy("key")
        .agg(F.map_from_entries(F.collect_list(F.struct("page", "count"))).alias("pages"))
    )
    # A key's records share one partition, so its offsets give the app's processing order.
    newest_first = F.sort_array(F.collect_list(F.struct("offset", "page")), asc=False)
    folded = clicks.groupBy("key").agg(
        F.count("*").alias("clicks"),
        F.transform(F.slice(newest_first, 1, RECENT_PAGES), lambda s: s["page"]).alias("recent"),
        F.min_by("ts", F.when(F.col("ts").isNotNull(), F.col("offset"))).alias("first_ts"),
        F.max_by("ts", "offset").alias("last_ts"),
    )
    joined = folded.join(page_counts, "key")
    return joined.select(
        "key",
        _profile(
            F.col("clicks"), F.col("pages"), F.col("recent"), F.col("first_ts"), F.col("last_ts")
        ).alias("profile"),
    )


def latest_profiles(spark: SparkSession, bootstrap_servers: str, output_topic: str) -> DataFrame:
    """``key string, profile struct``: the newest value per key; a tombstone drops the key."""
    latest = (
        _read(spark, bootstrap_servers, output_topic)
        .groupBy(F.col("key").cast("string").alias("key"))
        .agg(F.max_by("value", F.struct("partition", "offset")).alias("value"))
        .where(F.col("value").isNotNull() & F.col("key").isNotNull())
    )
    parsed = latest.select(
        "key", F.from_json(F.col("value").cast("string"), _PROFILE_SCHEMA).alias("p")
    )
    return parsed.select(
        "key",
        _profile(
            F.col("p.clicks"),
            F.col("p.pages"),
            F.col("p.recent"),
            F.col("p.first_ts"),
            F.col("p.last_ts"),
        ).alias("profile"),
    )


def verify_sessions(
    spark: SparkSession,
    bootstrap_servers: str,
    input_topic: str = "clicks",
    output_topic: str = "session-profiles",
) -> list[dict[str, Any]]:
    """Every mismatch as ``{"key", "expected", "actual"}`` (JSON text or None), sorted by key."""
    expected = expected_profiles(spark, bootstrap_servers, input_topic).alias("e")
    actual = latest_profiles(spark, bootstrap_servers, output_topic).alias("a")
    compared = expected.join(actual, "key", "full_outer").where(
        ~F.col("e.profile").eqNullSafe(F.col("a.profile"))
    )
    rows = compared.select(
        "key",
        F.to_json("e.profile").alias("expected"),
        F.to_json("a.profile").alias("actual"),
    ).orderBy("key")
    return [row.asDict() for row in rows.collect()]
