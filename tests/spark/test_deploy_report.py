"""The deploy report on a hand-made event set shaped like docs/events.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from streamrt.broker.embedded import BrokerThread
from streamrt.cli import main
from streamrt.deploy.report import commit_marks, processing_gaps
from streamrt.spark.deploy_report import deploy_report
from tests.kafka_helpers import create_topic, produce_acked

pytestmark = pytest.mark.spark

APP = "shop"


def _event(ts: float, instance: str, pid: int, type_: str, **fields: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "ts": ts,
        "application_id": APP,
        "instance_id": instance,
        "thread": 1,
        "thread_id": f"{instance}-thread-1",
        "static": True,
        "pid": pid,
        "host": "h",
        "type": type_,
        "fields": fields,
    }


def _state(ts: float, instance: str, pid: int, old: str, new: str) -> dict[str, Any]:
    return _event(ts, instance, pid, "thread_state", old=old, new=new)


# Instances a (pid 1, restarted as pid 3) and b (pid 2). The deploy starts at 103.
EVENTS = [
    _state(100.0, "a", 1, "PARTITIONS_ASSIGNED", "RUNNING"),
    _event(100.0, "a", 1, "rebalance_complete", generation=1),
    _state(100.5, "b", 2, "PARTITIONS_ASSIGNED", "RUNNING"),
    _event(100.5, "b", 2, "rebalance_complete", generation=1),
    _event(101.0, "a", 1, "commit", offsets={"clicks-0": 10}),
    _event(101.0, "b", 2, "commit", offsets={"clicks-1": 5}),
    _event(102.0, "a", 1, "commit", offsets={"clicks-0": 20}),
    _state(103.0, "a", 1, "RUNNING", "PENDING_SHUTDOWN"),
    _event(103.2, "b", 2, "commit", offsets={"clicks-1": 7}),
    _state(103.5, "a", 1, "PENDING_SHUTDOWN", "DEAD"),
    _event(104.0, "b", 2, "rebalance_started", generation=1),
    _event(104.0, "b", 2, "commit", offsets={"clicks-1": 7}),  # no progress: not a commit gap end
    _event(104.2, "b", 2, "rebalance_complete", generation=2),
    _state(106.0, "a", 3, "CREATED", "STARTING"),
    _event(106.0, "b", 2, "commit", offsets={"clicks-1": 9}),
    _event(106.5, "a", 3, "rebalance_complete", generation=2),
    _event(107.0, "a", 3, "restore_progress", task="0_0", records=50, bytes=500),
    _event(107.5, "a", 3, "restore_complete", task="0_0", records=100, bytes=1000, seconds=1.0),
    _state(108.0, "a", 3, "PARTITIONS_ASSIGNED", "RUNNING"),
    _event(109.0, "a", 3, "commit", offsets={"clicks-0": 30}),
]


def _publish(bootstrap: str) -> None:
    topic = f"{APP}-events"
    create_topic(bootstrap, topic, 1)
    records = [(e["instance_id"].encode(), json.dumps(e).encode()) for e in EVENTS]
    produce_acked(bootstrap, topic, records, partition=0)


def test_deploy_report_numbers_and_files(
    spark: SparkSession, broker: BrokerThread, tmp_path: Path
) -> None:
    _publish(broker.bootstrap)

    report, _ = deploy_report(spark, broker.bootstrap, APP, from_ts=103.0)

    s = report.summary
    assert (s["rebalances"], s["generations"]) == (1, [2])
    assert (s["restored_records"], s["restored_bytes"]) == (100, 1000)
    assert [(r["generation"], r["members"], r["new"]) for r in report.rebalances] == [(2, 2, True)]
    # clicks-1: 106.0 was its last advance; the silence to the last event (109.0) is the gap.
    assert [(g.topic, g.partition, round(g.longest_gap_s, 3)) for g in report.partition_gaps] == [
        ("clicks", 0, 7.0),
        ("clicks", 1, 3.0),
    ]
    assert [(r["task"], r["records"], r["bytes"], r["complete"]) for r in report.restores] == [
        ("0_0", 100, 1000, True)
    ]
    assert [
        (r["instance_id"], r["old_pid"], r["new_pid"], round(r["downtime_s"], 3))
        for r in report.downtime
    ] == [("a", 1, 3, 4.5)]

    out = tmp_path / "report"
    args = ["report", "deploy", "--bootstrap-server", broker.bootstrap, "--application-id", APP]
    assert main([*args, "--out", str(out)]) == 0
    for table in ("summary", "rebalances", "partition_gaps", "restores", "downtime"):
        assert list((out / table).glob("*.parquet")), table
    whole = spark.read.parquet(str(out / "summary")).first()
    assert whole is not None and whole["rebalances"] == 2  # no --from: generation 1 counts too
    markdown = (out / "report.md").read_text()
    assert "| a | 1 | 103.500 | 3 | 108.000 | 4.500 |" in markdown
    assert "<h2>Instance downtime</h2>" in (out / "report.html").read_text()
    for chart in ("downtime.png", "gaps.png"):
        assert (out / chart).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(("from_ts", "to_ts"), [(103.0, None), (None, None), (101.5, 105.0)])
def test_spark_and_python_reports_agree_on_processing_gaps(
    spark: SparkSession, broker: BrokerThread, from_ts: float | None, to_ts: float | None
) -> None:
    """One definition of a processing gap: the Spark job computes what processing_gaps does."""
    _publish(broker.bootstrap)
    report, _ = deploy_report(spark, broker.bootstrap, APP, from_ts=from_ts, to_ts=to_ts)
    start = from_ts if from_ts is not None else EVENTS[0]["ts"]
    end = to_ts if to_ts is not None else EVENTS[-1]["ts"]
    upper = [e for e in EVENTS if e["ts"] <= end]
    expected = processing_gaps(commit_marks(upper), start, end)
    assert report.partition_gaps == expected
    assert report.summary["longest_gap_s"] == max(g.longest_gap_s for g in expected)
