"""A thread added at run time (``add_stream_thread``) takes a task of its own instance, which
opens the state directory its old thread closed and restores nothing; the other instance keeps
its tasks, and the counts stay exact (issue 26, scenario (d) of bench/rebalance_cooperative.py).

Instance ``a`` starts alone, then ``b`` joins and takes 0_2 and 0_3; a second thread on ``a``
must take 0_0 or 0_1 (a's state), not 0_3 (b's: ``a`` holds only a stale copy from before ``b``
joined, so it would restore what ``b`` wrote since). Both brokers, real RocksDB, exactly-once v2
(streamrt's cooperative member) and at-least-once (aiokafka's eager one).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.eos_support import count_updates, exactness

pytestmark = pytest.mark.slow

PARTITIONS = 4
KEYS = 16


def feed(bootstrap: str, start: int, n: int) -> None:
    """Key ``k<i % 16>`` always on partition ``i % 4``: each key is counted by one task."""
    numbers = range(start, start + n)
    records = [(f"k{i % KEYS}".encode(), b"e") for i in numbers]
    produce(bootstrap, "events", records, partitions=[i % PARTITIONS for i in numbers])


def expected(n: int) -> dict[str, int]:
    return dict(Counter(f"k{i % KEYS}" for i in range(n)))


def settings(bootstrap: str, state: Path, instance: str, guarantee: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": instance,
        "num.stream.threads": "1",
        "processing.guarantee": guarantee,
        "statestore.cache.max.bytes": "0",  # every update emitted: counts must be 1..n
        "session.timeout.ms": "8000",
        "heartbeat.interval.ms": "500",
        "commit.interval.ms": "200",
    }


def tasks_of(app: App) -> set[str]:
    return {t for th in app.metadata_for_local_threads() for t in th.active_tasks}


def restored(app: App) -> int:
    """Changelog records restored by every thread of the instance so far."""
    return sum(th.records_restored for th in app.metadata_for_local_threads())


def running(*apps: App) -> bool:
    """Every thread RUNNING with a task of its own, and the four tasks owned."""
    local = [th for a in apps for th in a.metadata_for_local_threads()]
    return all(th.state.name == "RUNNING" and th.active_tasks for th in local) and (
        sum(len(tasks_of(a)) for a in apps) == PARTITIONS
    )


def counted(bootstrap: str, n: int) -> bool:
    latest = {k: v[-1] for k, v in count_updates(bootstrap).items()}
    return latest == expected(n)


@pytest.mark.parametrize(
    ("guarantee", "protocol"),
    [("exactly_once_v2", "cooperative"), ("at_least_once", "eager")],
    ids=["eos-cooperative", "alos-eager"],
)
def test_a_task_moved_to_an_added_thread_restores_nothing(
    guarantee: str,
    protocol: str,
    any_broker,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if protocol == "eager":  # Kafka Streams' switch: upgrade.from a version before 2.4
        monkeypatch.setenv("STREAMRT_UPGRADE_FROM", "2.3")
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, "events", PARTITIONS)
    create_topic(bootstrap, "event-counts-out", PARTITIONS)
    feed(bootstrap, 0, 200)
    a = make_app(settings(bootstrap, tmp_path / "a", "a", guarantee))
    b = make_app(settings(bootstrap, tmp_path / "b", "b", guarantee))
    started: list[App] = []
    try:
        a.start()
        started.append(a)
        wait_until(lambda: running(a), what="a alone owns the four tasks")
        b.start()
        started.append(b)
        wait_until(lambda: running(a, b) and len(tasks_of(b)) == 2, what="a and b, two each")
        assert tasks_of(b) == {"0_2", "0_3"}  # what makes a move to another instance visible
        feed(bootstrap, 200, 200)  # b's changelogs run ahead of a's stale copies
        wait_until(lambda: counted(bootstrap, 400), what="400 events counted")
        before = {"a": restored(a), "b": restored(b)}
        owned_by_a = tasks_of(a)

        assert a.add_stream_thread() == 2
        wait_until(
            lambda: len(a.metadata_for_local_threads()) == 2 and running(a, b),
            what="a's second thread owns a task",
        )
        feed(bootstrap, 400, 200)
        wait_until(lambda: counted(bootstrap, 600), what="600 events counted")

        assert {"a": restored(a), "b": restored(b)} == before  # nothing restored anywhere
        assert tasks_of(a) == owned_by_a and tasks_of(b) == {"0_2", "0_3"}
        new_thread = next(th for th in a.metadata_for_local_threads() if th.thread_index == 2)
        assert len(new_thread.active_tasks) == 1 and new_thread.records_restored == 0
    finally:
        for app in started:
            app.stop()
    if guarantee == "exactly_once_v2":  # every key's counts exactly 1..n: nothing lost or twice
        assert exactness(count_updates(bootstrap), expected(600)) == (0, 0)
