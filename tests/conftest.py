"""Shared fixtures: a real embedded broker on 127.0.0.1 in a background thread."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread

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
