"""A standby promoted to active starts processing at once: no restore, and no wait behind the
standbys' own fetch.

The restore consumer keeps a long-poll Fetch in flight for the standby changelogs; once their
active owner is gone nothing arrives, so each Fetch lasts ``fetch.max.wait.ms``. A broker answers
one request per connection at a time, so a restore check that listed the changelog ends on that
connection waited for the Fetch (the lost-host benchmark: ~1 s more to take over with a standby
than without). Here the survivor's restore consumer waits 5 s per Fetch: the promotion must not.

Embedded broker, real aiokafka, real RocksDB, two in-process instances.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from streamrt.runtime import App
from tests.kafka_helpers import produce, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.test_membership_integration import (
    all_running,
    counts,
    events,
    expected,
    settings,
    setup_topics,
)

pytestmark = pytest.mark.slow

FETCH_WAIT_MS = 5000  # the standbys' idle Fetch: what a restore check must not wait for


def instance(bootstrap: str, state: Any, name: str, extra: dict[str, str]) -> App:
    return make_app({**settings(bootstrap, state, name, 1), "num.standby.replicas": "1", **extra})


def test_a_promoted_standby_runs_without_waiting_for_the_standby_fetch(
    broker_factory, tmp_path
) -> None:
    broker = broker_factory()  # fast group timings (conftest)
    setup_topics(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, "events", events(400, keys=100))
    victim = instance(broker.bootstrap, tmp_path / "v", "victim", {})
    survivor = instance(
        broker.bootstrap,
        tmp_path / "s",
        "survivor",
        {"restore.consumer.fetch.max.wait.ms": str(FETCH_WAIT_MS)},
    )
    seen: list[tuple[float, str, dict[str, Any]]] = []
    survivor.on_event(lambda e: seen.append((time.monotonic(), e["type"], e["fields"])))
    victim.start()
    try:
        wait_until(lambda: counts(broker.bootstrap) == expected(400, 100), what="victim alone")
        survivor.start()
        wait_until(lambda: all_running(victim, survivor, partitions=2), what="a task each")
        (own,) = survivor.metadata_for_local_threads()[0].active_tasks
        lost = "0_1" if own == "0_0" else "0_0"
        wait_until(
            lambda: survivor.metadata_for_local_threads()[0].standby_lags == {lost: 0},
            what="the standby caught up",
        )
        time.sleep(1)  # the standby's Fetch now waits on an idle changelog
        victim.stop()  # a static member: no LeaveGroup, its task stays assigned to it
        removed_at = time.monotonic()
        assert survivor.remove_members(["victim"]) == {"victim-thread-1": None}
        wait_until(lambda: all_running(survivor, partitions=2), what="the survivor has both")
        after = [(t, kind, f) for t, kind, f in seen if t >= removed_at]
        started = next(t for t, kind, _ in after if kind == "rebalance_started")
        ready = next(t for t, kind, f in after if kind == "restore_ready" and f["task"] == lost)
        assert not [f for _, kind, f in after if kind == "restore_started" and f["task"] == lost]
        # before the fix: >= one whole Fetch (5 s) between the revocation and the lost task's
        # first record; now the join and opening the stores (well under a second unloaded)
        assert ready - started < FETCH_WAIT_MS / 2000, f"{ready - started:.2f} s to run {lost}"
        produce(broker.bootstrap, "events", events(100, keys=100))
        final = {k: v + 1 for k, v in expected(400, 100).items()}
        wait_until(lambda: counts(broker.bootstrap) == final, what="counts after takeover")
    finally:
        survivor.stop()
        victim.stop()
