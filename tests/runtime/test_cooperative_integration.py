"""Cooperative rebalancing (KIP-429) on streamrt's own membership, end to end.

Two instances count a steady feed; a third joins. Cooperatively, only the tasks that move are
revoked (first generation) and assigned to the newcomer (the next one); every other task keeps
processing through both rounds. Eagerly (``upgrade.from`` before 2.4), every task stops.
On both brokers (embedded, Apache Kafka), real librdkafka fetching, real RocksDB.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, wait_until
from tests.runtime.counting_app import make_app

pytestmark = pytest.mark.slow

PARTITIONS = 6
TASKS = {f"0_{p}" for p in range(PARTITIONS)}


class Feeder:
    """Sends one record to every input partition every 20 ms until stopped."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        try:
            while not self.stop.is_set():
                for p in range(PARTITIONS):
                    await producer.send("events", key=f"k{p}".encode(), value=b"e", partition=p)
                    self.sent += 1
                await asyncio.sleep(0.02)
            await producer.flush()
        finally:
            await producer.stop()


class Sampler:
    """Every 25 ms: each instance's per-task processed-record counts, with the time."""

    def __init__(self, apps: dict[str, App]) -> None:
        self.apps = apps
        self.stop = threading.Event()
        self.samples: list[tuple[float, str, dict[str, int]]] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            for name, app in list(self.apps.items()):
                for t in app.metadata_for_local_threads():
                    records = dict(getattr(t, "task_records", {}) or {})
                    self.samples.append((time.monotonic(), name, records))
            time.sleep(0.025)

    def progressed(self, name: str, task: str, since: float, until: float) -> bool:
        """``task`` on instance ``name`` processed records between ``since`` and ``until``
        (how long it paused is a benchmark's figure: bench/rebalance_cooperative.py)."""
        counts = [
            r[task]
            for ts, who, r in self.samples
            if who == name and since <= ts <= until and task in r
        ]
        return len(counts) > 1 and counts[-1] > counts[0]

    def restarted(self, name: str, task: str) -> bool:
        """The task's count went down: it was closed and created again (a new task object)."""
        counts = [r[task] for _ts, who, r in self.samples if who == name and task in r]
        return any(b < a for a, b in itertools.pairwise(counts))


def settings(bootstrap: str, state: Path, instance: str, upgrade_from: str | None) -> dict:
    out = {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": instance,
        "session.timeout.ms": "8000",
        "heartbeat.interval.ms": "500",
        "commit.interval.ms": "200",
    }
    if upgrade_from is not None:
        out["upgrade.from"] = upgrade_from
    return out


def tasks_of(app: App) -> set[str]:
    return {t for th in app.metadata_for_local_threads() for t in th.active_tasks}


def running(apps: list[App], each: int) -> bool:
    owned = [tasks_of(a) for a in apps]
    states = [th.state.name for a in apps for th in a.metadata_for_local_threads()]
    return (
        all(len(t) == each for t in owned)
        and set().union(*owned) == TASKS
        and all(s == "RUNNING" for s in states)
    )


def generation_before(events: list[dict[str, Any]], index: int) -> int:
    """The generation of the last ``rebalance_complete`` before ``events[index]``."""
    for e in reversed(events[:index]):
        if e["type"] == "rebalance_complete":
            return int(e["fields"]["generation"])
    raise AssertionError(f"no rebalance_complete before event {index}")


def generation_after(events: list[dict[str, Any]], index: int) -> int:
    """The generation of the first ``rebalance_complete`` after ``events[index]`` (a
    cooperative revocation comes with the new generation's assignment)."""
    for e in events[index:]:
        if e["type"] == "rebalance_complete":
            return int(e["fields"]["generation"])
    raise AssertionError(f"no rebalance_complete after event {index}")


@pytest.mark.parametrize("upgrade_from", [None, "2.3"], ids=["cooperative", "eager"])
def test_a_third_instance_moves_only_what_it_takes(
    upgrade_from: str | None, any_broker, tmp_path: Path
) -> None:
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, "events", PARTITIONS)
    create_topic(bootstrap, "event-counts-out", PARTITIONS)
    names = ("a", "b", "c")
    apps = {n: make_app(settings(bootstrap, tmp_path / n, n, upgrade_from)) for n in names}
    events: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for n in names:
        apps[n].on_event(events[n].append)
    feeder, sampler = Feeder(bootstrap), Sampler({n: apps[n] for n in ("a", "b")})
    started: list[App] = []
    try:
        for n in ("a", "b"):
            apps[n].start()
            started.append(apps[n])
        wait_until(lambda: running([apps["a"], apps["b"]], 3), what="a and b share six tasks")
        feeder.thread.start()
        sampler.thread.start()
        wait_until(lambda: feeder.sent > 300, what="a steady feed")
        before = {n: tasks_of(apps[n]) for n in ("a", "b")}
        marks = {n: len(events[n]) for n in ("a", "b")}
        joined_at = time.monotonic()
        apps["c"].start()
        started.append(apps["c"])
        wait_until(lambda: running(list(apps.values()), 2), what="three instances, two each")
        time.sleep(0.5)
        settled_at = time.monotonic()
    finally:
        sampler.stop.set()
        feeder.stop.set()
        for app in started:
            app.stop()
    after = {n: tasks_of_last(events[n]) for n in names}
    kept = {n: before[n] & after[n] for n in ("a", "b")}
    moved = {n: before[n] - after[n] for n in ("a", "b")}
    assert after["c"] == moved["a"] | moved["b"] and len(after["c"]) == 2
    revoked = {
        n: [(i, e) for i, e in enumerate(events[n]) if i >= marks[n] and e["type"] == "revocation"]
        for n in ("a", "b")
    }
    if upgrade_from is None:
        for n in ("a", "b"):
            gone = {t for _i, e in revoked[n] for t in e["fields"]["tasks"]}
            assert gone == moved[n], (n, gone, moved[n])  # no revoke of a task that stays
            for task in kept[n]:  # the same task kept processing through both rounds
                assert not sampler.restarted(n, task), (n, task)
                assert sampler.progressed(n, task, joined_at, settled_at), (n, task)
            for i, e in revoked[n]:  # revoked in generation g, assigned to c in g + 1
                g = generation_after(events[n], i)
                got = [
                    generation_before(events["c"], j)
                    for j, ce in enumerate(events["c"])
                    if ce["type"] == "assignment"
                    and set(e["fields"]["tasks"]) <= set(ce["fields"]["tasks"])
                ]
                assert got and got[0] == g + 1, (n, g, got)
    else:
        for n in ("a", "b"):  # eager: every task of the instance stops
            gone = {t for _i, e in revoked[n] for t in e["fields"]["tasks"]}
            assert gone == before[n], (n, gone, before[n])
            assert all(sampler.restarted(n, task) for task in kept[n]), n


def tasks_of_last(events: list[dict[str, Any]]) -> set[str]:
    """The tasks of an instance's last assignment event."""
    last = [e for e in events if e["type"] == "assignment"]
    return set(last[-1]["fields"]["tasks"]) if last else set()
