"""A versioned table on the real embedded broker: its versions go to the changelog and a new
instance restores them, out-of-order version included, for as-of joins (KIP-914)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamrt.runtime import App
from streamrt.runtime.graph.materialized import Materialized
from tests.kafka_helpers import create_topic, produce, read_all, wait_until


def versioned_app(bootstrap: str, state: Path) -> App:
    app = App(
        {
            "application.id": "vj-it",
            "bootstrap.servers": bootstrap,
            "state.dir": str(state),
            "commit.interval.ms": "200",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
        }
    )
    table = app.table(
        "users",
        key_serde="str",
        value_serde="str",
        store=Materialized.as_versioned("users-v", 1000, in_memory=True),
    )
    clicks = app.stream("clicks", key_serde="str", value_serde="str")
    clicks.left_join(table, lambda c, u: f"{c}+{u}", grace=50).to(
        "out", key_serde="str", value_serde="str"
    )
    return app


def run_until(app: App, condition: Any, what: str) -> None:
    app.start()
    try:
        wait_until(lambda: app.state.name == "RUNNING", what="app running")
        wait_until(condition, what=what)
    finally:
        app.stop()
    assert app.fatal_error is None


def test_versions_are_restored_from_the_changelog(broker, tmp_path: Path) -> None:
    b = broker.bootstrap
    for topic in ("users", "clicks", "out"):
        create_topic(b, topic, 1, **{"retention.ms": "-1"})
    users = [(b"u", b"v1"), (b"u", b"v3"), (b"u", b"v2")]  # v2 (ts 200) arrives last
    produce(b, "users", users, timestamps=[100, 300, 200])
    changelog = "vj-it-users-v-changelog"
    run_until(
        versioned_app(b, tmp_path / "a"),
        lambda: len(read_all(b, changelog)) >= 4,  # three versions and the stream time row
        "versions in the changelog",
    )
    # a new instance (in-memory store, fresh state dir) has only the changelog to go by
    clicks = [(b"u", b"c1"), (b"u", b"c0"), (b"u", b"push")]
    produce(b, "clicks", clicks, timestamps=[250, 150, 400])
    run_until(
        versioned_app(b, tmp_path / "b"),
        lambda: len(read_all(b, "out")) >= 2,
        "joined clicks",
    )
    got = [(r.value.decode(), r.timestamp) for r in read_all(b, "out")]
    assert got == [("c0+v1", 150), ("c1+v2", 250)]
