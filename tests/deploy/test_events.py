"""Lifecycle events reach ``<application.id>-events`` with the documented schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamrt.events import install_event_publisher
from tests.kafka_helpers import create_topic, produce, read_all, wait_until
from tests.runtime.counting_app import make_app

pytestmark = pytest.mark.slow

SCHEMA_KEYS = {
    "v",
    "ts",
    "application_id",
    "instance_id",
    "thread",
    "thread_id",
    "static",
    "pid",
    "host",
    "type",
    "fields",
}


def test_runtime_events_are_published_keyed_by_instance(broker, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "events", 2)
    create_topic(broker.bootstrap, "event-counts-out", 2)
    produce(broker.bootstrap, "events", [(b"k", b"v")] * 20)
    app = make_app(
        {
            "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path / "state"),
            "group.instance.id": "web-1",
            "num.stream.threads": "2",
            "commit.interval.ms": "200",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
        }
    )
    publisher = install_event_publisher(app)
    app.start()
    try:
        wait_until(
            lambda: [t.state.name for t in app.metadata_for_local_threads()] == ["RUNNING"] * 2,
            what="both threads RUNNING",
        )
        wait_until(lambda: len(read_all(broker.bootstrap, "event-counts-out")) >= 1, what="output")
        wait_until(
            lambda: any(
                json.loads(r.value)["type"] == "commit"
                for r in read_all(broker.bootstrap, "counting-events")
            ),
            what="a commit event",
        )
    finally:
        app.stop()
        publisher.close()
    records = read_all(broker.bootstrap, "counting-events")
    events = [json.loads(r.value) for r in records]
    assert {r.key for r in records} == {b"web-1"}
    assert all(set(e) == SCHEMA_KEYS for e in events)
    assert {e["application_id"] for e in events} == {"counting"}
    assert {e["thread_id"] for e in events if e["type"] != "app_state"} == {
        "web-1-thread-1",
        "web-1-thread-2",
    }
    app_states = [e for e in events if e["type"] == "app_state"]  # instance-wide: no thread
    assert app_states and all(e["thread"] is None for e in app_states)
    assert app_states[0]["fields"] == {"old": "CREATED", "new": "REBALANCING"}
    types = {e["type"] for e in events}
    assert {"thread_state", "rebalance_complete", "assignment", "commit"} <= types
    generations = [e["fields"]["generation"] for e in events if e["type"] == "rebalance_complete"]
    assert generations and all(isinstance(g, int) and g >= 1 for g in generations)
    states = [(e["thread"], e["fields"]["new"]) for e in events if e["type"] == "thread_state"]
    assert (1, "RUNNING") in states and (2, "RUNNING") in states
    assert dict(states) == {1: "DEAD", 2: "DEAD"}  # the last state of each thread
    assert all(e["static"] for e in events)
