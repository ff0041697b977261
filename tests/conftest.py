"""Shared fixtures: a real embedded broker on 127.0.0.1 in a background thread."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread


@pytest.fixture(autouse=True)
def _restore_root_logging() -> Iterator[None]:
    """In-process CLI tests configure the root logger (``streamrt.logs``); put it back after
    each test so later tests' library warnings go to pytest's capture, not the terminal."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


# Short group timings so tests of rebalances run in seconds, not minutes.
FAST_GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "4",
    "log.retention.check.interval.ms": "500",
}


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerThread]]:
    """Start brokers with config overrides; all are stopped at the end of the test."""
    started: list[BrokerThread] = []

    def make(overrides: dict[str, str] | None = None, data_dir: Path | None = None) -> BrokerThread:
        merged = {**FAST_GROUP_OVERRIDES, **(overrides or {})}
        b = BrokerThread(data_dir or tmp_path / f"broker-{len(started)}", merged).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def broker(broker_factory: Callable[..., BrokerThread]) -> BrokerThread:
    """A fresh broker with fast group timings."""
    return broker_factory()


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def fuzz_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """One broker shared by the examples of a hypothesis test (function fixtures are not reset)."""
    b = BrokerThread(tmp_path_factory.mktemp("fuzz-broker"), FAST_GROUP_OVERRIDES).start()
    yield b
    b.stop()


# --- Apache Kafka (issue 18): the real thing from Maven Central, marker `kafka` ----------------
# Session-scoped JVM clusters (a start costs 10-20 s); the function-scoped fixtures report a
# node that died during a test and restart stopped nodes for the next one. No Maven Central,
# java or mvn: every test that needs Apache Kafka skips with the reason.


def _apache_kafka(factory: pytest.TempPathFactory, brokers: int) -> Iterator[object]:
    from streamrt.dev.apache_kafka import ApacheKafka, KafkaUnavailable

    kafka = ApacheKafka(brokers, work_dir=factory.mktemp(f"apache-kafka-{brokers}"))
    try:
        kafka.start()
    except KafkaUnavailable as exc:
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="session")
def _apache_kafka_1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    yield from _apache_kafka(tmp_path_factory, 1)


@pytest.fixture(scope="session")
def _apache_kafka_3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    yield from _apache_kafka(tmp_path_factory, 3)


def _checked(kafka: object) -> Iterator[object]:
    from tests.apache_kafka.support import healthy

    yield from healthy(kafka)


@pytest.fixture
def apache_kafka(_apache_kafka_1: object) -> Iterator[object]:
    """One Apache Kafka broker (KRaft, combined node), shared by the session."""
    yield from _checked(_apache_kafka_1)


@pytest.fixture
def apache_kafka_cluster(_apache_kafka_3: object) -> Iterator[object]:
    """Three Apache Kafka nodes, 3-voter quorum, RF 3, min.insync.replicas=2 (shared)."""
    yield from _checked(_apache_kafka_3)


@pytest.fixture(params=["embedded", pytest.param("apache-kafka", marks=pytest.mark.kafka)])
def any_broker(request: pytest.FixtureRequest) -> Iterator[object]:
    """A ``BrokerEndpoint(kind, bootstrap)`` on each broker: differential tests run on both.

    Both sides start empty, as a fresh embedded broker does: the shared Apache Kafka broker
    has every topic and group a test made deleted after the test (so tests may reuse fixed
    names such as an ``application.id``)."""
    from tests.apache_kafka.support import BrokerEndpoint, clean_slate

    if request.param == "embedded":
        b = request.getfixturevalue("broker")
        yield BrokerEndpoint("embedded", b.bootstrap)
        return
    kafka = request.getfixturevalue("apache_kafka")
    bootstrap = kafka.bootstrap  # type: ignore[attr-defined]
    yield BrokerEndpoint("apache-kafka", bootstrap)
    clean_slate(bootstrap)
