"""Hand-off between two real processes of one instance (issue 17): happy path and bad cases.

Embedded broker (with its metrics), real ``streamrt run`` processes, real RocksDB; the
lifecycle is read from the ``<application.id>-events`` topic and the processes' JSON logs.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from streamrt.deploy.report import count_rebalances, count_restores
from streamrt.runtime.handoff import ping, socket_path
from tests.handoff.support import (
    APP_ID,
    broker_rebalances,
    counts,
    expected,
    instance,
    now,
    send,
    since,
    wait_counts,
    wait_log,
    wait_running,
)
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.slow


def test_handoff_takes_over_without_rebalance_or_restore(tmp_path: Path) -> None:
    with instance(tmp_path) as (inst, tail, metrics):
        old = inst.spawn()
        wait_running(tail, old)
        send(inst.bootstrap, 400)
        wait_counts(inst.bootstrap, 400)
        before = broker_rebalances(metrics)
        t0 = now()
        new = inst.spawn(handoff=True)
        assert old.wait(90) == 0, old.text()
        wait_running(tail, new)
        send(inst.bootstrap, 400, start=400)
        wait_counts(inst.bootstrap, 800)  # exact: nothing lost, nothing counted twice
        assert broker_rebalances(metrics) == before  # the coordinator agrees: no rebalance
        assert count_rebalances(tail.events(), t0) == (0, [])
        assert count_restores(tail.events(), t0) == (0, 0)
        assert "hand-off: took over" in new.text()
        assert "hand-off: released to the successor" in old.text()
        released = since(tail, t0, "handoff_released")
        assert [e["pid"] for e in released] == [old.pid]
        assert ping(socket_path(inst.work / "state" / APP_ID))["pid"] == new.pid
        assert new.alive()
