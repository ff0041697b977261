"""Exactly-once v2 end to end: exact output across a clean bounce, SIGKILLs and a zombie;
aborted transactions leave no trace in the stores. Embedded broker, real aiokafka, RocksDB."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.kafka_helpers import create_topic, produce, read_all, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.eos_support import (
    EOS,
    count_updates,
    exactness,
    read_committed,
    run_counting_process,
)

pytestmark = pytest.mark.slow

BROKER = {"group.min.session.timeout.ms": "1000"}
SESSION = {"session.timeout.ms": "8000", "heartbeat.interval.ms": "500", **EOS}


def events(n: int, keys: int = 16, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % keys}".encode(), b"e") for i in range(start, start + n)]


def expected(n: int, keys: int = 16) -> dict[str, int]:
    return dict(Counter(f"k{i % keys}" for i in range(n)))


def settings(bootstrap: str, state: Path, instance: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": instance,
        **SESSION,
    }


def exact(bootstrap: str, n: int) -> bool:
    return exactness(count_updates(bootstrap), expected(n)) == (0, 0)


def latest(bootstrap: str) -> dict[str, int]:
    return {k: v[-1] for k, v in count_updates(bootstrap).items()}


def setup(bootstrap: str, partitions: int = 2) -> None:
    create_topic(bootstrap, "events", partitions)
    create_topic(bootstrap, "event-counts-out", partitions)


def test_clean_bounce_keeps_the_output_exact(broker_factory, tmp_path) -> None:
    broker = broker_factory(BROKER)
    setup(broker.bootstrap)
    produce(broker.bootstrap, "events", events(200))
    app = make_app(settings(broker.bootstrap, tmp_path / "s", "bounce"))
    app.start()
    try:
        wait_until(lambda: latest(broker.bootstrap) == expected(200), what="first counts")
    finally:
        app.stop()
    app = make_app(settings(broker.bootstrap, tmp_path / "s", "bounce"))
    app.start()
    try:
        produce(broker.bootstrap, "events", events(100, start=200))
        wait_until(lambda: latest(broker.bootstrap) == expected(300), what="counts after bounce")
        assert exactness(count_updates(broker.bootstrap), expected(300)) == (0, 0)
        assert app.metadata_for_local_threads()[0].records_restored == 0
    finally:
        app.stop()
    # The output and the changelog were written in transactions: every data record is
    # followed by a commit marker (read_uncommitted sees the same data, no aborted extra).
    assert len(read_all(broker.bootstrap, "event-counts-out")) == 300
