"""Exception handlers end to end: poison records on the embedded broker, real aiokafka.

Each test runs the poison app (``tests/runtime/poison_app.py``): a KeyError in
``map_values`` (processing), a value that is not JSON (deserialization) and a value the int
sink serde cannot write (production), between good records that must all come out.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import App, AppState
from streamrt.runtime.exception_handlers import ErrorContext, HandlerResponse
from tests.kafka_helpers import create_topic, produce, read_all, wait_until
from tests.runtime.poison_app import make_app

GOOD = [(b"a", b'{"amount": 1}'), (b"b", b'{"amount": 2}')]
POISON = (b"p", b'{"x": 1}')  # KeyError in map_values
NOT_JSON = (b"n", b"{not json")
NOT_INT = (b"s", b'{"amount": "ab"}')  # "abab" cannot be written by the int serde
LAST = (b"c", b'{"amount": 3}')


def settings(bootstrap: str, state: Path, **extra: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "commit.interval.ms": "200",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
        "errors.retry.backoff.ms": "100",
        # the series resets after 4 x backoff.max quiet: 20 s, not 1.6 s, so a restart slowed by a
        # loaded machine still counts as the next attempt (the backoffs stay 100 then 200 ms)
        "errors.retry.backoff.max.ms": "5000",
        **extra,
    }


def doubled(bootstrap: str) -> list[tuple[bytes, int]]:
    return [(r.key, struct.unpack(">q", r.value)[0]) for r in read_all(bootstrap, "doubled")]


def setup(bootstrap: str, *records: tuple[bytes, bytes]) -> None:
    create_topic(bootstrap, "orders", 1)
    create_topic(bootstrap, "doubled", 1)
    produce(bootstrap, "orders", list(records))


EXPECTED = [(b"a", 2), (b"b", 4), (b"c", 6)]


def test_continue_skips_poison_records_counts_them_and_processes_the_rest(
    broker, tmp_path: Path
) -> None:
    setup(broker.bootstrap, *GOOD, POISON, NOT_JSON, NOT_INT, LAST)
    app = make_app(
        settings(
            broker.bootstrap,
            tmp_path,
            **{
                "processing.exception.handler": "LogAndContinueExceptionHandler",
                "deserialization.exception.handler": "log_and_continue",
                "production.exception.handler": "continue",
            },
        )
    )
    app.start()
    try:
        wait_until(lambda: doubled(broker.bootstrap) == EXPECTED, what="good records doubled")
        skipped, dead = app.error_stats.snapshot()
        assert skipped == {
            ("processing", "continue"): 1,
            ("deserialization", "continue"): 1,
            ("production", "continue"): 1,
        }
        assert dead == {}
        assert app.thread_failures == 0 and app.health().healthy
    finally:
        app.stop()
    assert app.state is AppState.NOT_RUNNING


def test_dead_letter_topic_holds_the_original_records_with_error_headers(
    broker, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "orders-dlq", 1)
    create_topic(broker.bootstrap, "orders", 1)
    create_topic(broker.bootstrap, "doubled", 1)
    produce(broker.bootstrap, "orders", GOOD)
    produce_with_headers(broker.bootstrap, "orders", *POISON, [("trace-id", b"t-42")])
    produce(broker.bootstrap, "orders", [NOT_JSON, NOT_INT, LAST])
    app = make_app(
        settings(
            broker.bootstrap,
            tmp_path,
            **{
                "processing.exception.handler": "dlq",
                "default.deserialization.exception.handler": "dlq",
                "production.exception.handler": "dlq",
                "errors.deadletterqueue.topic.name": "orders-dlq",
            },
        )
    )
    app.start()
    try:
        wait_until(lambda: doubled(broker.bootstrap) == EXPECTED, what="good records doubled")
        dlq = wait_until(
            lambda: (
                (records := read_all(broker.bootstrap, "orders-dlq"))
                and len(records) == 3
                and records
            ),
            what="three dead letters",
        )
        _skipped, dead = app.error_stats.snapshot()
        assert dead == {"processing": 1, "deserialization": 1, "production": 1}
    finally:
        app.stop()
    by_key = {r.key: r for r in dlq}
    assert set(by_key) == {POISON[0], NOT_JSON[0], NOT_INT[0]}
    poison = by_key[POISON[0]]
    assert poison.value == POISON[1]
    headers = dict(poison.headers)
    assert headers["trace-id"] == b"t-42"  # the source headers are kept
    assert headers["__streams.errors.exception"] == b"builtins.KeyError"
    assert headers["__streams.errors.exception.message"] == b"'amount'"
    assert b"KeyError" in headers["__streams.errors.exception.stacktrace"]
    assert headers["__streams.errors.topic"] == b"orders"
    assert headers["__streams.errors.partition"] == b"0"
    assert headers["__streams.errors.offset"] == b"2"
    assert headers["__streams.errors.stage"] == b"processing"
    assert headers["__streams.errors.handler"] == b"dlq"
    not_json = dict(by_key[NOT_JSON[0]].headers)
    assert by_key[NOT_JSON[0]].value == NOT_JSON[1]
    assert not_json["__streams.errors.stage"] == b"deserialization"
    assert not_json["__streams.errors.offset"] == b"3"
    not_int = dict(by_key[NOT_INT[0]].headers)
    assert by_key[NOT_INT[0]].value == NOT_INT[1]  # the source record, not the failed output
    assert not_int["__streams.errors.stage"] == b"production"
    assert not_int["__streams.errors.exception"] == b"struct.error"


def produce_with_headers(
    bootstrap: str, topic: str, key: bytes, value: bytes, headers: list[tuple[str, bytes]]
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=key, value=value, headers=headers)
    assert producer.flush(30) == 0


def test_user_callable_decides_per_record(broker, tmp_path: Path) -> None:
    setup(broker.bootstrap, *GOOD, POISON, LAST)
    seen: list[tuple[str, str, int, Any]] = []

    def handler(context: ErrorContext, exc: BaseException) -> HandlerResponse:
        seen.append(
            (context.stage.value, context.topic, context.offset, json.loads(context.value or b""))
        )
        assert isinstance(exc, KeyError)
        return HandlerResponse.CONTINUE

    app = make_app(settings(broker.bootstrap, tmp_path), processing_exception_handler=handler)
    app.start()
    try:
        wait_until(lambda: doubled(broker.bootstrap) == EXPECTED, what="good records doubled")
    finally:
        app.stop()
    assert seen == [("processing", "orders", 2, {"x": 1})]
    assert app.error_stats.snapshot()[0] == {("processing", "handler"): 1}


def test_fail_backs_off_then_ends_in_error_without_endless_replacement(
    broker, tmp_path: Path
) -> None:
    setup(broker.bootstrap, *GOOD, POISON, LAST)
    events: list[dict[str, Any]] = []
    app = make_app(settings(broker.bootstrap, tmp_path, **{"errors.retry.max.attempts": "2"}))
    app.on_event(events.append)
    app.start()
    try:
        wait_until(lambda: app.state is AppState.ERROR, what="instance in ERROR")
        failed = [e["fields"] for e in events if e["type"] == "thread_failed"]
        assert [f["attempt"] for f in failed] == [1, 2, 3]
        assert [f["retry_in_ms"] for f in failed] == [100, 200, None]
        assert {f["key"] for f in failed} == {"record orders-0@2"}
        assert app.thread_failures == 3
        health = app.health()
        assert not health.healthy and health.state == "ERROR"
        assert health.reason is not None and "orders-0@2" in health.reason
        assert "KeyError" in health.reason
        fatal = [e for e in events if e["type"] == "fatal_error"]
        assert len(fatal) == 1 and "giving up" in fatal[0]["fields"]["error"]
        # the poison record's offset was never committed: a fixed app restarts from it
        assert (b"c", 6) not in doubled(broker.bootstrap)
    finally:
        app.stop()
    assert app.state is AppState.ERROR


@pytest.mark.parametrize(
    "key,value",
    [
        ("processing.exception.handler", "sometimes"),
        ("production.exception.handler", "dlq"),  # dlq needs a topic name
        ("errors.retry.backoff.ms", "0"),
    ],
)
def test_bad_handler_settings_are_refused_naming_the_key(key: str, value: str) -> None:
    app = make_app({key: value})
    with pytest.raises(ConfigError, match=key.split(".")[0]):
        app.resolve_config()


def test_config_accepts_kafka_names() -> None:
    app = App(
        {
            "application.id": "x",
            "default.deserialization.exception.handler": (
                "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"
            ),
            "processing.exception.handler": "LogAndFailProcessingExceptionHandler",
            "default.production.exception.handler": "dlq",
            "errors.dead.letter.queue.topic.name": "dlq-topic",
        }
    )
    handlers = app.resolve_config().error_handlers()
    assert (handlers.deserialization, handlers.processing, handlers.production) == (
        "continue",
        "fail",
        "dlq",
    )
    assert handlers.dead_letter_topic == "dlq-topic"
