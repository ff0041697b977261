"""Registry serdes in a running app: the embedded broker, a real registry, real clients.

Clicks are written by confluent-kafka's ``AvroSerializer`` and read by ``apps/avro_sessions.py``
(Avro source, Avro state store and changelog, Avro sink). Version 2 of the app, started on the
same state after version 1 stopped, reads old records and old state with reader schemas that add
defaulted fields. Bad input and a registry that goes away go to the deserialization handler.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from apps.avro_sessions import CLICK_V1, CLICK_V2, make_app
from streamrt.dev.apicurio import ApicurioRegistry
from tests.kafka_helpers import create_topic, produce, read_all, wait_until

IN, OUT, CHANGELOG = "clicks-avro", "avro-session-profiles", "avro-sessions-avro-profiles-changelog"


def settings(bootstrap: str, state: Path, **extra: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "commit.interval.ms": "200",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
        "errors.retry.backoff.ms": "100",
        "errors.retry.backoff.max.ms": "5000",
        **extra,
    }


def clicks(registry: ApicurioRegistry, schema: str, values: list[dict[str, Any]]) -> list:
    """Clicks as a Java or confluent-kafka producer writes them (user key as plain text)."""
    ser = AvroSerializer(SchemaRegistryClient({"url": registry.url}), schema)
    ctx = SerializationContext(IN, MessageField.VALUE)
    return [(v["user"].encode(), ser(v, ctx)) for v in values]


def profiles(bootstrap: str, registry: ApicurioRegistry, topic: str = OUT) -> list[dict]:
    de = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [de(r.value, ctx) for r in read_all(bootstrap, topic)]


def test_evolution_across_a_restart_with_avro_state_and_changelog(
    broker, tmp_path: Path, registry: ApicurioRegistry, serde_config: dict[str, Any]
) -> None:
    for topic in (IN, OUT):
        create_topic(broker.bootstrap, topic, 1)
    v1 = [{"user": "ann", "page": f"/p{i}", "ts": i} for i in range(3)]
    produce(broker.bootstrap, IN, clicks(registry, CLICK_V1, v1))
    app = make_app(settings(broker.bootstrap, tmp_path), serde_config, version=1)
    app.start()
    try:
        wait_until(lambda: len(profiles(broker.bootstrap, registry)) == 3, what="3 profiles")
    finally:
        app.stop()
    assert profiles(broker.bootstrap, registry)[-1] == {
        "user": "ann",
        "clicks": 3,
        "last_page": "/p2",
    }
    # subjects by TopicNameStrategy for the topics, RecordNameStrategy for the store
    subjects = set(SchemaRegistryClient({"url": registry.url}).get_subjects())
    assert {f"{IN}-value", f"{OUT}-value", "streamrt.demo.Profile"} <= subjects
    # the changelog holds Confluent wire-format Avro any Avro consumer reads
    changelog = profiles(broker.bootstrap, registry, CHANGELOG)
    assert changelog[-1]["clicks"] == 3

    v2 = [{"user": "ann", "page": "/new", "ts": 9, "referrer": "search"}]
    produce(broker.bootstrap, IN, clicks(registry, CLICK_V2, v2))
    produce(
        broker.bootstrap, IN, clicks(registry, CLICK_V1, [{"user": "bob", "page": "/b", "ts": 10}])
    )
    app2 = make_app(settings(broker.bootstrap, tmp_path), serde_config, version=2)
    app2.start()
    try:
        wait_until(lambda: len(profiles(broker.bootstrap, registry)) == 5, what="5 profiles")
    finally:
        app2.stop()
    out = profiles(broker.bootstrap, registry)
    # ann's version-1 state read with Profile v2 (referrers defaulted to {}), then folded on
    assert out[3] == {"user": "ann", "clicks": 4, "last_page": "/new", "referrers": {"search": 1}}
    # bob's click was written with Click v1: the reader schema defaults its referrer
    assert out[4] == {"user": "bob", "clicks": 1, "last_page": "/b", "referrers": {"direct": 1}}


def _dlq_messages(bootstrap: str) -> dict[int, str]:
    return {
        int(dict(r.headers)["__streams.errors.offset"]): dict(r.headers)[
            "__streams.errors.exception.message"
        ].decode()
        for r in read_all(bootstrap, "clicks-dlq")
    }


def test_bad_records_go_to_the_handler_naming_topic_partition_offset_and_schema_id(
    broker, tmp_path: Path, registry: ApicurioRegistry, serde_config: dict[str, Any]
) -> None:
    for topic in (IN, OUT, "clicks-dlq"):
        create_topic(broker.bootstrap, topic, 1)
    (good,) = clicks(registry, CLICK_V1, [{"user": "ann", "page": "/", "ts": 1}])
    unknown_id = b"\x00" + (987654).to_bytes(4, "big") + good[1][5:]
    mismatch = good[1][:5] + b"\xff\xff\xff"  # a known id, a payload that is not a Click
    produce(
        broker.bootstrap,
        IN,
        [good, (b"x", unknown_id), (b"y", mismatch), (b"z", b'{"not":"avro"}'), good],
    )
    extra = {
        "default.deserialization.exception.handler": "dlq",
        "errors.deadletterqueue.topic.name": "clicks-dlq",
    }
    app = make_app(settings(broker.bootstrap, tmp_path, **extra), serde_config)
    app.start()
    try:
        wait_until(lambda: len(profiles(broker.bootstrap, registry)) == 2, what="2 profiles")
        dead = wait_until(
            lambda: len(m := _dlq_messages(broker.bootstrap)) == 3 and m, what="3 dead letters"
        )
    finally:
        app.stop()
    assert sorted(dead) == [1, 2, 3]  # each bad record, by its offset
    assert "topic 'clicks-avro'" in dead[1] and "schema id 987654" in dead[1]
    assert f"schema id {good[1][1:5].hex() and int.from_bytes(good[1][1:5], 'big')}" in dead[2]
    assert "no Confluent wire-format header" in dead[3]
    assert [p["clicks"] for p in profiles(broker.bootstrap, registry)] == [1, 2]


def test_a_registry_down_mid_stream_sends_only_unknown_ids_to_the_handler(
    broker, tmp_path: Path, registry: ApicurioRegistry, serde_config: dict[str, Any]
) -> None:
    for topic in (IN, OUT, "clicks-dlq"):
        create_topic(broker.bootstrap, topic, 1)
    first = clicks(registry, CLICK_V1, [{"user": "ann", "page": "/", "ts": 1}])
    unseen = json.loads(CLICK_V2)  # a schema no serde of this session has cached
    unseen["fields"].append({"name": f"f{uuid.uuid4().hex}", "type": "string", "default": ""})
    later = clicks(registry, json.dumps(unseen), [{"user": "ann", "page": "/", "ts": 2}])
    produce(broker.bootstrap, IN, first)
    extra = {
        "default.deserialization.exception.handler": "dlq",
        "errors.deadletterqueue.topic.name": "clicks-dlq",
    }
    app = make_app(settings(broker.bootstrap, tmp_path, **extra), serde_config)
    app.start()
    try:
        wait_until(lambda: len(read_all(broker.bootstrap, OUT)) == 1, what="1 profile")
        registry.stop()
        produce(broker.bootstrap, IN, first + later + first)  # v1 id cached, v2 id never seen
        dead = wait_until(lambda: _dlq_messages(broker.bootstrap), what="a dead letter")
        wait_until(lambda: len(read_all(broker.bootstrap, OUT)) == 3, what="3 profiles")
    finally:
        app.stop()
    sid = int.from_bytes(later[0][1][1:5], "big")
    assert list(dead) == [2] and f"schema id {sid}" in dead[2] and "registry" in dead[2]
    assert app.error_stats.snapshot()[1] == {"deserialization": 1}


def test_a_registry_down_at_start_fails_the_record_until_it_is_back_and_loses_nothing(
    broker, tmp_path: Path, registry: ApicurioRegistry, serde_config: dict[str, Any]
) -> None:
    for topic in (IN, OUT):
        create_topic(broker.bootstrap, topic, 1)
    unseen = json.loads(CLICK_V1)  # registered now, never cached by the app's client
    unseen["fields"].append({"name": f"f{uuid.uuid4().hex}", "type": "string", "default": ""})
    (record,) = clicks(registry, json.dumps(unseen), [{"user": "ann", "page": "/", "ts": 1}])
    sid = int.from_bytes(record[1][1:5], "big")
    produce(broker.bootstrap, IN, [record])
    registry.stop()
    events: list[dict[str, Any]] = []
    app = make_app(
        settings(broker.bootstrap, tmp_path, **{"errors.retry.max.attempts": "50"}), serde_config
    )
    app.on_event(events.append)
    app.start()  # default handler: fail
    try:
        failed = wait_until(
            lambda: [e["fields"] for e in events if e["type"] == "thread_failed"],
            what="the record failing the thread",
        )
        assert failed[0]["key"] == "record clicks-avro-0@0"
        error = failed[0]["error"]
        assert "clicks-avro-0@0" in error and f"schema id {sid}" in error, error
        assert read_all(broker.bootstrap, OUT) == []
        registry.start()  # the same storage: the schema id is known again
        wait_until(lambda: len(read_all(broker.bootstrap, OUT)) == 1, what="the record through")
        wait_until(lambda: app.health().healthy, what="healthy again")
    finally:
        app.stop()
    assert profiles(broker.bootstrap, registry)[0]["user"] == "ann"


def test_evolution_across_a_rolling_deploy_of_two_static_instances(
    broker, tmp_path: Path, registry: ApicurioRegistry, serde_config: dict[str, Any]
) -> None:
    create_topic(broker.bootstrap, IN, 2)
    create_topic(broker.bootstrap, OUT, 2)
    users = [f"u{i}" for i in range(8)]

    def batch(schema: str, referrer: str | None) -> list:
        extra = {} if referrer is None else {"referrer": referrer}
        return clicks(registry, schema, [{"user": u, "page": "/", "ts": 1, **extra} for u in users])

    def instance(name: str, version: int) -> Any:
        # a session long enough for a restart on a loaded machine (6 s was not, once, in CI)
        extra = {"group.instance.id": name, "session.timeout.ms": "20000"}
        conf = settings(broker.bootstrap, tmp_path / name, **extra)
        return make_app(conf, serde_config, version=version)

    def outputs() -> int:
        return len(read_all(broker.bootstrap, OUT))

    produce(broker.bootstrap, IN, batch(CLICK_V1, None))
    a, b = instance("a", 1), instance("b", 1)
    a.start()
    b.start()
    try:
        wait_until(lambda: outputs() == 8, what="version 1 output")
        for step, name in enumerate(("a", "b"), 2):  # the rolling deploy: one at a time, v1 -> v2
            old = a if name == "a" else b
            old.stop()
            new = instance(name, 2)
            new.start()
            a, b = (new, b) if name == "a" else (a, new)
            produce(broker.bootstrap, IN, batch(CLICK_V2, f"during-{name}"))
            expected = 8 * step
            wait_until(lambda n=expected: outputs() == n, what=f"output after {name}")
        produce(broker.bootstrap, IN, batch(CLICK_V2, "final"))
        wait_until(lambda: outputs() == 32, what="output after the deploy")
        assert a.thread_failures == 0 and b.thread_failures == 0
        restored = [m.records_restored for app in (a, b) for m in app.metadata_for_local_threads()]
        assert restored == [0, 0]  # static membership: each got its own partition back
    finally:
        a.stop()
        b.stop()
    de = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    ctx = SerializationContext(OUT, MessageField.VALUE)
    last = {r.key: de(r.value, ctx) for r in read_all(broker.bootstrap, OUT)}
    assert sorted(last) == sorted(u.encode() for u in users)
    for profile in last.values():  # v1 state, then v2 state, all folded in
        assert profile["clicks"] == 4 and profile["referrers"]["final"] == 1
