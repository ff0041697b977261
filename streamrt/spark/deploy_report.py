"""The deploy report in Spark: what a rolling restart cost, from ``<application.id>-events``.

One deploy is the window ``[from_ts, to_ts]`` (epoch seconds); without bounds the whole topic
is one deploy. Events before ``from_ts`` only set the baseline generation, as in
``streamrt.deploy.report.count_rebalances``. Definitions (each table is a Parquet dataset):

- ``summary``: one row: window, rebalances (new generations), restored records/bytes.
- ``rebalances``: per ``rebalance_complete`` generation in the window: first/last time and the
  number of thread members that reported it; ``new`` says whether it counts as a rebalance.
- ``partition_gaps``: per input partition, its longest processing gap as
  ``streamrt.deploy.report.processing_gaps`` defines it (one definition for both reports),
  with the ``commit`` events that advanced its offset as the marks of progress
  (``commit_marks``): a partition whose committed offset does not move is not being
  processed. Without ``from_ts``/``to_ts`` the window is the first to the last event.
- ``restores``: per (pid, thread, task): records/bytes from ``restore_complete``, or the last
  ``restore_progress`` of a restore that did not complete (``count_restores``).
- ``downtime``: per pid change of an instance id: last event of the old pid to the time the
  new pid was ready (every thread of it had become RUNNING at least once).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from streamrt.deploy.report import PartitionGap

__all__ = ("DeployTables", "deploy_report", "load_events")

_EVENT_SCHEMA = T.StructType(
    [
        T.StructField("ts", T.DoubleType()),
        T.StructField("instance_id", T.StringType()),
        T.StructField("thread", T.IntegerType()),
        T.StructField("thread_id", T.StringType()),
        T.StructField("pid", T.LongType()),
        T.StructField("type", T.StringType()),
        T.StructField("fields", T.StringType()),  # raw JSON: its shape depends on ``type``
    ]
)


@dataclass(slots=True)
class DeployTables:
    """The tables of one deploy as collected rows (small: one row per generation, task...).

    Not a second deploy report: the events-only view of one, with the processing gap of
    ``streamrt.deploy.report`` (the rolling-deploy driver's :class:`DeployReport`)."""

    summary: dict[str, Any]
    rebalances: list[dict[str, Any]]
    partition_gaps: list[PartitionGap]
    restores: list[dict[str, Any]]
    downtime: list[dict[str, Any]]

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "summary": [self.summary],
            "rebalances": self.rebalances,
            "partition_gaps": [asdict(g) for g in self.partition_gaps],
            "restores": self.restores,
            "downtime": self.downtime,
        }


def load_events(spark: SparkSession, bootstrap_servers: str, application_id: str) -> DataFrame:
    """The events topic as typed columns plus ``seq`` (its offset: the topic has 1 partition)."""
    raw = (
        spark.read.format("streamrt")
        .option("bootstrap.servers", bootstrap_servers)
        .option("subscribe", f"{application_id}-events")
        .load()
    )
    parsed = raw.select(
        (F.col("partition").cast("long") * F.lit(1 << 40) + F.col("offset")).alias("seq"),
        F.from_json(F.col("value").cast("string"), _EVENT_SCHEMA).alias("e"),
    )
    return parsed.select("seq", "e.*").where(F.col("type").isNotNull())


def deploy_report(
    spark: SparkSession,
    bootstrap_servers: str,
    application_id: str,
    from_ts: float | None = None,
    to_ts: float | None = None,
) -> tuple[DeployTables, dict[str, DataFrame]]:
    """Compute the report; also returns the DataFrames behind it (for Parquet)."""
    events = load_events(spark, bootstrap_servers, application_id).cache()
    upper = events if to_ts is None else events.where(F.col("ts") <= F.lit(to_ts))
    start = F.lit(from_ts if from_ts is not None else float("-inf"))
    window = upper.where(F.col("ts") >= start)
    bounds = window.agg(F.min("ts").alias("lo"), F.max("ts").alias("hi")).first()
    lo = from_ts if from_ts is not None else (bounds["lo"] if bounds else None)
    hi = to_ts if to_ts is not None else (bounds["hi"] if bounds else None)

    frames = {
        "rebalances": _rebalances(upper, start),
        "partition_gaps": _partition_gaps(upper, lo, hi),
        "restores": _restores(window),
        "downtime": _downtime(window),
    }
    collected = {
        name: [r.asDict(recursive=True) for r in df.collect()] for name, df in frames.items()
    }
    gaps = [PartitionGap(**row) for row in collected.pop("partition_gaps")]
    new_generations = [r["generation"] for r in collected["rebalances"] if r["new"]]
    summary = {
        "application_id": application_id,
        "from_ts": lo,
        "to_ts": hi,
        "events": window.count(),
        "rebalances": len(new_generations),
        "generations": new_generations,
        "restored_records": sum(r["records"] for r in collected["restores"]),
        "restored_bytes": sum(r["bytes"] for r in collected["restores"]),
        "longest_gap_s": max((g.longest_gap_s for g in gaps), default=0.0),
        "max_downtime_s": max((r["downtime_s"] for r in collected["downtime"]), default=0.0),
    }
    events.unpersist()
    report = DeployTables(summary=summary, partition_gaps=gaps, **collected)
    frames["summary"] = spark.createDataFrame([summary], schema=_SUMMARY_SCHEMA)
    return report, frames


_SUMMARY_SCHEMA = T.StructType(
    [
        T.StructField("application_id", T.StringType()),
        T.StructField("from_ts", T.DoubleType()),
        T.StructField("to_ts", T.DoubleType()),
        T.StructField("events", T.LongType()),
        T.StructField("rebalances", T.LongType()),
        T.StructField("generations", T.ArrayType(T.LongType())),
        T.StructField("restored_records", T.LongType()),
        T.StructField("restored_bytes", T.LongType()),
        T.StructField("longest_gap_s", T.DoubleType()),
        T.StructField("max_downtime_s", T.DoubleType()),
    ]
)


def _rebalances(events: DataFrame, start: Any) -> DataFrame:
    joined = events.where(F.col("type") == "rebalance_complete").select(
        "ts",
        "thread_id",
        "instance_id",
        F.get_json_object("fields", "$.generation").cast("long").alias("generation"),
    )
    joined = joined.where(F.col("generation").isNotNull())
    base = joined.where(F.col("ts") < start).agg(F.max("generation").alias("base"))
    in_window = joined.where(F.col("ts") >= start)
    return (
        in_window.groupBy("generation")
        .agg(
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
            F.countDistinct(F.coalesce("thread_id", "instance_id")).alias("members"),
        )
        .crossJoin(base)
        .select(
            "generation",
            "first_ts",
            "last_ts",
            "members",
            (F.col("generation") > F.coalesce(F.col("base"), F.lit(0))).alias("new"),
        )
        .orderBy("generation")
    )


def _partition_gaps(events: DataFrame, start: float | None, end: float | None) -> DataFrame:
    """``processing_gaps(commit_marks(events), start, end)`` of streamrt.deploy.report, in Spark:
    the same marks, the same gaps, the same tie-break (the first longest gap)."""
    commits = events.where(F.col("type") == "commit").select(
        "seq",
        "ts",
        F.explode(F.from_json(F.get_json_object("fields", "$.offsets"), "map<string,long>")).alias(
            "topic_partition", "offset"
        ),
    )
    if start is None or end is None:  # no events at all
        commits = commits.where(F.lit(False))
        start = end = 0.0
    by_partition = Window.partitionBy("topic_partition").orderBy("seq")
    # commit_marks: a commit that advanced the offset (a partition's first commit counts).
    marks = (
        commits.withColumn("previous", F.lag("offset").over(by_partition))
        .where(F.col("previous").isNull() | (F.col("offset") > F.col("previous")))
        .where(F.col("ts") <= F.lit(end))
        .withColumn("prev_ts", F.lag("ts").over(by_partition))
    )
    # A gap ending in the window counts whole; with no earlier mark it begins at the start.
    ended = marks.where(F.col("ts") >= F.lit(start)).select(
        "topic_partition",
        "seq",
        F.col("ts").alias("gap_end_ts"),
        (F.col("ts") - F.coalesce(F.col("prev_ts"), F.lit(start))).alias("gap_s"),
    )
    # The silence after a partition's last mark, up to the end, is a gap too.
    newest = Window.partitionBy("topic_partition").orderBy(F.col("seq").desc())
    tail = (
        marks.withColumn("rank", F.row_number().over(newest))
        .where(F.col("rank") == 1)
        .select(
            "topic_partition",
            F.lit(None).cast("long").alias("seq"),
            F.lit(end).alias("gap_end_ts"),
            (F.lit(end) - F.col("ts")).alias("gap_s"),
        )
    )
    longest = Window.partitionBy("topic_partition").orderBy(
        F.col("gap_s").desc(), F.col("seq").asc_nulls_last()
    )
    return (
        ended.unionByName(tail)
        .withColumn("rank", F.row_number().over(longest))
        .where(F.col("rank") == 1)
        .select(
            F.regexp_extract("topic_partition", r"^(.*)-(\d+)$", 1).alias("topic"),
            F.regexp_extract("topic_partition", r"^(.*)-(\d+)$", 2).cast("int").alias("partition"),
            F.col("gap_s").alias("longest_gap_s"),
            (F.col("gap_end_ts") - F.col("gap_s")).alias("gap_start_ts"),
            "gap_end_ts",
        )
        .orderBy("topic", "partition")
    )


def _restores(events: DataFrame) -> DataFrame:
    restore = events.where(F.col("type").isin("restore_progress", "restore_complete")).select(
        "seq",
        "instance_id",
        "pid",
        "thread",
        "type",
        F.get_json_object("fields", "$.task").alias("task"),
        F.get_json_object("fields", "$.records").cast("long").alias("records"),
        F.get_json_object("fields", "$.bytes").cast("long").alias("bytes"),
    )
    # A complete restore counts its complete event; an unfinished one its last progress.
    latest = Window.partitionBy("pid", "thread", "task").orderBy(F.col("seq").desc())
    completes = restore.where(F.col("type") == "restore_complete")
    unfinished = (
        restore.withColumn("rank", F.row_number().over(latest))
        .where((F.col("rank") == 1) & (F.col("type") == "restore_progress"))
        .drop("rank")
    )
    return (
        completes.unionByName(unfinished)
        .select(
            "instance_id",
            "pid",
            "thread",
            "task",
            "records",
            "bytes",
            (F.col("type") == "restore_complete").alias("complete"),
        )
        .orderBy("instance_id", "pid", "thread", "task")
    )


def _downtime(events: DataFrame) -> DataFrame:
    per_pid = events.groupBy("instance_id", "pid").agg(
        F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts")
    )
    running = (
        events.where(
            (F.col("type") == "thread_state") & (F.get_json_object("fields", "$.new") == "RUNNING")
        )
        .groupBy("instance_id", "pid", "thread")
        .agg(F.min("ts").alias("running_ts"))
        .groupBy("instance_id", "pid")
        .agg(F.max("running_ts").alias("ready_ts"))
    )
    order = Window.partitionBy("instance_id").orderBy("first_ts")
    pids = per_pid.join(running, ["instance_id", "pid"], "left").select(
        "instance_id",
        F.lag("pid").over(order).alias("old_pid"),
        F.lag("last_ts").over(order).alias("down_ts"),
        F.col("pid").alias("new_pid"),
        "ready_ts",
    )
    return (
        pids.where(F.col("old_pid").isNotNull())
        .withColumn("downtime_s", F.col("ready_ts") - F.col("down_ts"))
        .orderBy("instance_id", "down_ts")
    )
