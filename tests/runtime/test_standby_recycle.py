"""A standby promoted to active hands its open stores to the active task (Kafka recycles the
standby task): nothing is closed and reopened, the counts it followed are there, and the task
processes on from them.

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


def instance(bootstrap: str, state: Any, name: str) -> App:
    return make_app({**settings(bootstrap, state, name, 1), "num.standby.replicas": "1"})


def test_a_promoted_standby_keeps_its_open_stores_and_counts_on(broker_factory, tmp_path) -> None:
    broker = broker_factory()  # fast group timings (conftest)
    setup_topics(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, "events", events(400, keys=100))
    victim = instance(broker.bootstrap, tmp_path / "v", "victim")
    survivor = instance(broker.bootstrap, tmp_path / "s", "survivor")
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
        victim.stop()  # a static member: no LeaveGroup, its task stays assigned to it
        removed_at = time.monotonic()
        assert survivor.remove_members(["victim"]) == {"victim-thread-1": None}
        wait_until(lambda: all_running(survivor, partitions=2), what="the survivor has both")
        after = [(kind, f.get("task")) for t, kind, f in seen if t >= removed_at]
        assert ("standby_released", lost) in after and ("standby_promoted", lost) in after
        assert ("standby_closed", lost) not in after  # recycled: not closed and reopened
        assert ("restore_started", lost) not in after  # the standby had it all
        produce(broker.bootstrap, "events", events(100, keys=100))
        final = {k: v + 1 for k, v in expected(400, 100).items()}
        wait_until(lambda: counts(broker.bootstrap) == final, what="counts after takeover")
    finally:
        survivor.stop()
        victim.stop()
