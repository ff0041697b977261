"""Joins and a global table on the real embedded broker with aiokafka."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apps.enrichment import build
from streamrt.runtime import App
from streamrt.runtime.graph.copartition import CopartitionError
from tests.kafka_helpers import create_topic, produce, read_all, wait_until


def settings(bootstrap: str, state: Path, app_id: str) -> dict[str, str]:
    return {
        "application.id": app_id,
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "commit.interval.ms": "200",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
    }


def values(bootstrap: str, topic: str) -> list[tuple[str, Any, int, list[Any]]]:
    return [
        (r.key.decode(), json.loads(r.value), r.timestamp, list(r.headers))
        for r in read_all(bootstrap, topic)
    ]


def test_enrichment_join_on_the_broker_keeps_timestamps_and_headers(broker, tmp_path: Path) -> None:
    b = broker.bootstrap
    for topic in ("users", "clicks", "enriched-clicks"):
        # records with timestamp 0 would be due for time-based retention at once
        create_topic(b, topic, 2, **{"retention.ms": "-1"})
    produce(b, "users", [(b"u1", json.dumps({"name": "ann", "country": "fr"}).encode())])
    app = App(settings(b, tmp_path, "enrich-it"))
    build(app.builder)
    app.start()
    try:
        wait_until(lambda: app.state.name == "RUNNING", what="app running")
        # the table is loaded once its record is processed; then the clicks (ts 0 kept)
        wait_until(lambda: app.query_local("users-store", "u1") is not None, what="users loaded")
        _produce_with_headers(b, "clicks", [(b"u1", b'{"page":"/a"}'), (b"u2", b'{"page":"/b"}')])
        wait_until(lambda: len(read_all(b, "enriched-clicks")) == 2, what="enriched clicks")
    finally:
        app.stop()
    got = sorted(values(b, "enriched-clicks"))
    assert got == [
        ("u1", {"page": "/a", "user": "ann", "country": "fr"}, 0, [("src", b"web")]),
        ("u2", {"page": "/b", "user": "unknown"}, 0, [("src", b"web")]),
    ]
    assert app.fatal_error is None


def _produce_with_headers(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def go() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for key, value in records:
                await producer.send_and_wait(
                    topic, value, key=key, timestamp_ms=0, headers=[("src", b"web")]
                )
        finally:
            await producer.stop()

    asyncio.run(go())


def test_join_of_topics_not_copartitioned_fails_at_start(broker, tmp_path: Path) -> None:
    b = broker.bootstrap
    create_topic(b, "users2", 2)
    create_topic(b, "clicks2", 3)
    app = App(settings(b, tmp_path, "enrich-bad"))
    users = app.table("users2", key_serde="str")
    app.stream("clicks2", key_serde="str").join(users, lambda c, u: c).to("out2")
    with pytest.raises(
        CopartitionError, match=r"clicks2 \(3 partitions\), users2 \(2 partitions\)"
    ):
        app.start()
    assert app.threads == {}


def test_global_table_is_restored_then_updated_and_joined(broker, tmp_path: Path) -> None:
    b = broker.bootstrap
    create_topic(b, "countries", 3)
    create_topic(b, "visits", 1)
    create_topic(b, "visits-out", 1)
    produce(
        b,
        "countries",
        [(b"fr", b"France"), (b"de", b"Germany"), (b"it", b"Italy")],
        partitions=[0, 1, 2],
    )
    app = App(settings(b, tmp_path, "glob-it"))
    countries = app.global_table("countries", store="countries", key_serde="str", value_serde="str")
    app.stream("visits", key_serde="str", value_serde="str").join(
        countries, lambda cc, name: f"{cc}={name}", key_mapper=lambda _k, cc: cc
    ).to("visits-out", key_serde="str", value_serde="str")
    app.start()
    try:
        # restored from all 3 partitions before any stream thread started
        assert [app.query_local("countries", c) for c in ("fr", "de", "it")] == [
            "France",
            "Germany",
            "Italy",
        ]
        produce(b, "countries", [(b"es", b"Spain")], partitions=[1])
        wait_until(lambda: app.query_local("countries", "es") == "Spain", what="global update")
        produce(b, "visits", [(b"v1", b"es"), (b"v2", b"xx"), (b"v3", b"it")])
        wait_until(lambda: len(read_all(b, "visits-out")) == 2, what="joined visits")
    finally:
        app.stop()
    got = [(r.key, r.value) for r in read_all(b, "visits-out")]
    assert got == [(b"v1", b"es=Spain"), (b"v3", b"it=Italy")]


def test_to_with_a_topic_extractor_on_the_broker(broker, tmp_path: Path) -> None:
    """Issue 38: ``to(extractor)`` writes each record to the topic it names (on main the
    function was taken for a topic name and the first record failed)."""
    b = broker.bootstrap
    for topic in ("routed-in", "routed-a", "routed-b"):
        create_topic(b, topic, 1, **{"retention.ms": "-1"})
    app = App(settings(b, tmp_path, "routed-it"))
    app.stream("routed-in", key_serde="str", value_serde="str").to(
        lambda key, _value, _context: f"routed-{key[0]}"
    )
    produce(b, "routed-in", [(b"a1", b"x"), (b"b1", b"y"), (b"a2", b"z")])
    app.start()
    try:
        wait_until(
            lambda: len(read_all(b, "routed-a")) == 2 and len(read_all(b, "routed-b")) == 1,
            what="routed records",
        )
    finally:
        app.stop()
    assert [(r.key, r.value) for r in read_all(b, "routed-a")] == [(b"a1", b"x"), (b"a2", b"z")]
    assert [(r.key, r.value) for r in read_all(b, "routed-b")] == [(b"b1", b"y")]
    assert app.fatal_error is None
