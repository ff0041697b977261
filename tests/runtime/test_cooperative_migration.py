"""The rolling migration from eager to cooperative rebalancing, under exactly-once.

Two instances count a steady feed with ``upgrade.from=2.3`` (eager). A rolling bounce then
restarts each without ``upgrade.from``: between the two restarts the group mixes an
eager-configured and a cooperative member (each follows its own protocol, the leader holds back
what a member still owns, as Kafka Streams), and the last join is already cooperative: the
instance that owned every task revokes only what the newcomer takes. Across the whole run the
committed output (read_committed) is exact: every key's counts are 1..n, nothing lost, nothing
counted twice. Dynamic members, so each restart is a leave and a join (two rebalances).
On both brokers (embedded, Apache Kafka).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.eos_support import EOS, count_updates, exactness, read_committed
from tests.runtime.test_cooperative_integration import (
    PARTITIONS,
    Feeder,
    running,
    tasks_of,
)

pytestmark = pytest.mark.slow


def settings(bootstrap: str, state: Path, upgrade_from: str | None) -> dict[str, str]:
    out = {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "session.timeout.ms": "8000",
        "heartbeat.interval.ms": "500",
        "commit.interval.ms": "200",
        **EOS,
    }
    if upgrade_from is not None:
        out["upgrade.from"] = upgrade_from
    return out


def revoked_since(events: list[dict[str, Any]], mark: int) -> set[str]:
    return {t for e in events[mark:] if e["type"] == "revocation" for t in e["fields"]["tasks"]}


def fed(bootstrap: str) -> dict[str, int]:
    """Per key, the records in the input topic (the producer's retries included)."""
    return dict(Counter(r.key.decode() for r in read_committed(bootstrap, "events")))


def off(updates: dict[str, list[int]], expected: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """What a failure shows: per key whose counts are not exactly 1..n, (n, how many counts
    were emitted, the highest)."""
    return {
        k: (n, len(updates.get(k, [])), max(updates.get(k, [0])))
        for k, n in expected.items()
        if sorted(updates.get(k, [])) != list(range(1, n + 1))
    }


def test_rolling_bounce_from_eager_to_cooperative_loses_and_duplicates_nothing(
    any_broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, "events", PARTITIONS)
    create_topic(bootstrap, "event-counts-out", PARTITIONS)
    apps: dict[str, App] = {
        n: make_app(settings(bootstrap, tmp_path / n, "2.3")) for n in ("a", "b")
    }
    events: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    feeder = Feeder(bootstrap)
    live: list[App] = []
    marks: dict[str, int] = {}

    def bounce(name: str, other: str) -> None:
        """Stop ``name``, let the other take over, start it again without upgrade.from."""
        sent = feeder.sent
        apps[name].stop()
        live.remove(apps[name])
        wait_until(lambda: running([apps[other]], PARTITIONS), what=f"{other} runs everything")
        wait_until(lambda: feeder.sent > sent + 120, what="the feed goes on meanwhile")
        apps[name] = make_app(settings(bootstrap, tmp_path / name, None))
        events[name] = []
        marks[other] = len(events[other])
        apps[name].on_event(events[name].append)
        apps[name].start()
        live.append(apps[name])

    try:
        for n in ("a", "b"):
            apps[n].on_event(events[n].append)
            apps[n].start()
            live.append(apps[n])
        wait_until(lambda: running(live, 3), what="a and b share six tasks (eager)")
        feeder.thread.start()
        wait_until(lambda: feeder.sent > 300, what="a steady feed")
        bounce("a", "b")  # then a is cooperative, b still eager: a mixed group
        wait_until(lambda: running(live, 3), what="the mixed group shares six tasks")
        sent = feeder.sent
        wait_until(lambda: feeder.sent > sent + 120, what="the mixed group processes")
        bounce("b", "a")  # a (cooperative) owns all six when b joins
        wait_until(lambda: running(live, 3), what="the cooperative group shares six tasks")
        final_a = tasks_of(apps["a"])
        taken = tasks_of(apps["b"])
        sent = feeder.sent
        wait_until(lambda: feeder.sent > sent + 120, what="the cooperative group processes")
    finally:
        feeder.stop.set()
        feeder.thread.join(timeout=30)
        try:
            expected = fed(bootstrap)
            if all(app.state.name == "RUNNING" for app in live):
                wait_until(
                    lambda: exactness(count_updates(bootstrap), expected)[1] == 0,
                    timeout=90,
                    what="every fed record counted",
                )
        finally:
            for app in live:
                app.stop()
    updates = count_updates(bootstrap)
    assert exactness(updates, expected) == (0, 0), off(updates, expected)
    # the last join was cooperative: a had all six, revoked only the tasks b took
    assert len(taken) == 3 and revoked_since(events["a"], marks["a"]) == taken, taken
    assert final_a | taken == {f"0_{p}" for p in range(PARTITIONS)} and not final_a & taken
