"""Issue 43 end to end: the broker bounced during a cooperative rebalance loses no task.

Two in-process instances on streamrt's own membership (cooperative): a owns all
six tasks, b joins; in round one a revokes the three tasks b will get, and the broker is
stopped as a says so (before a's second-round JoinGroup), then started again on the same port
and data dir. Within one session timeout of its return every task has an owner again
(before the fix a forgot its second-round rejoin: three tasks had none until a session expired).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from streamrt.broker.embedded import BrokerThread
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, wait_until
from tests.runtime.counting_app import make_app

PARTITIONS = 6
TASKS = {f"0_{p}" for p in range(PARTITIONS)}
SESSION_MS = 10_000
DOWN_S = 2.0


def _settings(bootstrap: str, state: Path, instance: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": instance,
        "session.timeout.ms": str(SESSION_MS),
        "heartbeat.interval.ms": "1000",
        "commit.interval.ms": "200",
    }


def _tasks(app: App) -> list[str]:
    return [t for th in app.metadata_for_local_threads() for t in th.active_tasks]


def _owned_once(apps: list[App]) -> bool:
    """Every task active on exactly one instance."""
    owned = [t for a in apps for t in _tasks(a)]
    return sorted(owned) == sorted(TASKS)


def test_tasks_are_owned_again_after_a_bounce_between_cooperative_rounds(
    broker: BrokerThread, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "events", PARTITIONS)
    create_topic(bootstrap, "event-counts-out", PARTITIONS)
    a = make_app(_settings(bootstrap, tmp_path / "a", "a"))
    b = make_app(_settings(bootstrap, tmp_path / "b", "b"))
    revoked = threading.Event()

    def on_a_event(event: dict[str, Any]) -> None:
        """On a's stream thread, inside its revocation callback: the second round's JoinGroup
        is sent only after it returns, so the broker is down before that round can complete."""
        if event["type"] == "revocation" and event["fields"]["tasks"] and not revoked.is_set():
            broker.stop()
            revoked.set()

    started: list[App] = []
    try:
        a.start()
        started.append(a)
        wait_until(lambda: sorted(_tasks(a)) == sorted(TASKS), 60, "a owns all six tasks")
        a.on_event(on_a_event)
        b.start()
        started.append(b)
        assert revoked.wait(60), "a revoked b's share in round one (and the broker stopped)"
        assert not _tasks(b)  # b gets its tasks only in the second round
        time.sleep(DOWN_S)  # down for a while, as a killed broker is: a's rejoin meets it
        broker.start()
        wait_until(
            lambda: _owned_once([a, b]),
            SESSION_MS / 1000,
            "every task owned again within one session timeout",
        )
        assert _tasks(b), "b got the tasks a revoked"
    finally:
        for app in started:
            app.stop()
