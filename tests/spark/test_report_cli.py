"""``streamrt report topic-stats`` end to end, in-process, on the shared session."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession

from streamrt.broker.embedded import BrokerThread
from streamrt.cli import main
from tests.kafka_helpers import create_topic, produce_acked

pytestmark = pytest.mark.spark


def test_topic_stats_per_partition(
    spark: SparkSession,
    broker: BrokerThread,
    topic_name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create_topic(broker.bootstrap, topic_name, 2)
    produce_acked(broker.bootstrap, topic_name, [(b"k", b"abc")] * 3, partition=0)
    produce_acked(broker.bootstrap, topic_name, [(None, b"z")] * 2, partition=1)
    args = ["report", "topic-stats", "--bootstrap-server", broker.bootstrap, "--topic", topic_name]

    assert main([*args, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [
        (r["partition"], r["records"], r["last_offset"], r["null_keys"], r["value_bytes"])
        for r in rows
    ] == [(0, 3, 2, 0, 9), (1, 2, 1, 2, 2)]

    assert main(args) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["partition", "records", "first_offset"]
    assert len(table) == 3
    assert not spark.sparkContext._jsc.sc().isStopped()  # the shared session survives
