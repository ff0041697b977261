"""Kafka Streams' metric names on ``GET /metrics``: a running app (embedded broker, real
records) is scraped; every metric docs/operations.md documents is there, the counters move
with the records, and the Grafana dashboard in docs/ queries only names the scrape found."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streamrt.broker.embedded import BrokerThread
from streamrt.runtime import App
from streamrt.runtime.config import ConfigError, StreamsConfig
from tests.conftest import FAST_GROUP_OVERRIDES
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import get, start_instance

DOCS = Path(__file__).resolve().parents[2] / "docs"
THREAD = "kafka_streams_stream_thread_metrics_"
TASK = "kafka_streams_stream_task_metrics_"
Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def documented() -> list[str]:
    """The Prometheus names of the table in docs/operations.md."""
    text = (DOCS / "operations.md").read_text()
    names = re.findall(r"^\| `[a-z-]+` \| `[a-z-]+` \| `(kafka_[a-z_]+)` \|", text, re.M)
    assert len(names) > 40, "the metric table in docs/operations.md was not found"
    return names


def scrape(app: App) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(get(app, "/metrics").text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def total(samples: Samples, name: str) -> float:
    return sum(samples.get(name, {}).values())


def processed(app: App, n: int, commits: float = 0) -> Samples | None:
    """A scrape once the threads processed ``n`` records and committed more than
    ``commits`` times (None before)."""
    samples = scrape(app)
    done = total(samples, THREAD + "process_total") >= n
    return samples if done and total(samples, THREAD + "commit_total") > commits else None


def records(start: int, n: int) -> list[tuple[bytes, bytes]]:
    """Five keys over and over: the count store reads each key back from its cache."""
    return [(b"k%d" % (i % 5), b"v%d" % i) for i in range(start, start + n)]


@pytest.fixture(scope="module")
def scrapes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Samples, Samples]]:
    """Two scrapes of one running instance, 60 more records processed in between."""
    broker = BrokerThread(tmp_path_factory.mktemp("broker"), FAST_GROUP_OVERRIDES).start()
    app: App | None = None
    try:
        create_topic(broker.bootstrap, "events", 2)
        create_topic(broker.bootstrap, "event-counts-out", 2)
        produce(broker.bootstrap, "events", records(0, 40))
        state = tmp_path_factory.mktemp("state")
        # DEBUG: the processor-node metrics too (Kafka records them only at DEBUG)
        extra = {"metrics.recording.level": "DEBUG"}
        app = start_instance(broker.bootstrap, state, "m-1", extra=extra)
        first = wait_until(lambda: processed(app, 40), 60, "the first 40 records processed")
        produce(broker.bootstrap, "events", records(40, 60))
        commits = total(first, THREAD + "commit_total")
        second = wait_until(
            lambda: processed(app, 100, commits), 60, "the next 60 records processed, committed"
        )
        yield first, second
    finally:
        if app is not None:
            app.stop()
        broker.stop()


def test_every_documented_kafka_streams_metric_is_scraped(
    scrapes: tuple[Samples, Samples],
) -> None:
    _, second = scrapes
    missing = [name for name in documented() if name not in second]
    assert not missing, f"documented but not scraped: {missing}"
    threads = {dict(k)["thread_id"] for k in second[THREAD + "process_total"]}
    assert threads == {"m-1-thread-1", "m-1-thread-2"}
    tasks = {dict(k)["task_id"] for k in second[TASK + "process_total"]}
    assert tasks == {"0_0", "0_1"}
    nodes = {
        dict(k)["processor_node_id"]
        for k in second["kafka_streams_stream_processor_node_metrics_process_total"]
    }
    assert len(nodes) >= 3  # the source, the count, the sink (and what lies between)
    stores = second["kafka_streams_stream_state_metrics_put_rate"]
    assert {dict(k)["state_id"] for k in stores} == {"event-counts"}
    assert {dict(k)["store_type"] for k in stores} == {"rocksdb"}


def test_the_moving_metrics_move(scrapes: tuple[Samples, Samples]) -> None:
    first, second = scrapes
    for name in ("process_total", "poll_total", "commit_total", "blocked_time_ns_total"):
        assert total(second, THREAD + name) > total(first, THREAD + name), name
    assert total(second, THREAD + "process_total") - total(first, THREAD + "process_total") >= 60
    assert total(second, TASK + "process_total") >= 100
    node = "kafka_streams_stream_processor_node_metrics_process_total"
    assert total(second, node) > total(first, node)
    # between the two scrapes records were processed: the rates over that window are above 0
    for name in ("process_rate", "poll_rate", "process_latency_avg", "process_latency_max"):
        assert total(second, THREAD + name) > 0, name
    assert 0 < total(second, THREAD + "poll_ratio") <= 2  # two threads, each at most 1
    assert total(second, TASK + "process_rate") > 0
    assert total(second, "kafka_streams_stream_state_metrics_put_rate") > 0
    assert total(second, "kafka_streams_stream_state_metrics_get_rate") > 0
    hits = second["kafka_streams_stream_record_cache_metrics_hit_ratio_avg"].values()
    assert all(0 <= h <= 1 for h in hits) and max(hits) > 0
    starts = second[THREAD + "thread_start_time"].values()
    assert all(s > 1.6e12 for s in starts)  # epoch milliseconds
    assert total(second, TASK + "restore_remaining_records_total") == 0


def dashboard_metric_names() -> set[str]:
    """Every metric name in the dashboard's panel queries (function and label names aside)."""
    board = json.loads((DOCS / "grafana-streams-dashboard.json").read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert exprs, "the dashboard has no queries"
    return {n for e in exprs for n in re.findall(r"\b(kafka_[a-z_]+|streamrt_[a-z_]+)\b", e)}


def test_the_dashboard_queries_only_scraped_metrics(scrapes: tuple[Samples, Samples]) -> None:
    _, second = scrapes
    names = dashboard_metric_names()
    assert len(names) >= 8
    unknown = sorted(names - set(second))
    assert not unknown, f"the dashboard queries metrics /metrics does not have: {unknown}"


def test_metrics_recording_level_takes_kafkas_levels_only() -> None:
    base = {"application.id": "a", "bootstrap.servers": "127.0.0.1:9092"}
    for level in ("INFO", "DEBUG", "TRACE"):
        config = StreamsConfig.from_mapping({**base, "metrics.recording.level": level})
        assert config.metrics_recording_level == level
    with pytest.raises(ConfigError, match=re.escape("metrics.recording.level 'LOUD' must be INFO")):
        StreamsConfig.from_mapping({**base, "metrics.recording.level": "LOUD"})
