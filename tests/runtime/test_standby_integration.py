"""Standby replicas end to end: a standby follows the active's changelog on another instance,
and when that instance is lost for good its task moves to the standby with nothing restored.

Embedded broker, real aiokafka, real RocksDB; the lost instance is a real process killed with
SIGKILL and removed from the group with the admin API (as an operator would).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamrt.clock import ManualClock
from streamrt.runtime import App
from tests.kafka_helpers import produce, read_all, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.test_membership_integration import (
    SESSION,
    all_running,
    committed_input,
    counts,
    events,
    expected,
    settings,
    setup_topics,
)

pytestmark = pytest.mark.slow

CHANGELOG = "counting-event-counts-changelog"


def run_victim(bootstrap: str, state: Path, standbys: int) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "streamrt.cli",
        "run",
        "tests.runtime.counting_app:app",
        "--instance-id",
        "victim",
        "--bootstrap-server",
        bootstrap,
        "--state-dir",
        str(state),
    ]
    for key, value in {**SESSION, "num.standby.replicas": str(standbys)}.items():
        args += ["--config", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        args, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL, text=True, env=env
    )


def changelog_records(bootstrap: str, partition: int) -> int:
    return sum(1 for r in read_all(bootstrap, CHANGELOG) if r.partition == partition)


@pytest.mark.parametrize("standbys", [1, 0])
def test_lost_instance_moves_to_its_standby_and_restores_only_the_lag(
    broker_factory, tmp_path, standbys: int
) -> None:
    broker = broker_factory()  # fast group timings (conftest)
    setup_topics(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, "events", events(400, keys=100))
    survivor = make_app(
        {
            **settings(broker.bootstrap, tmp_path / "s", "survivor", 1),
            "num.standby.replicas": str(standbys),
        }
    )
    seen: list[dict[str, Any]] = []
    survivor.on_event(seen.append)
    victim = run_victim(broker.bootstrap, tmp_path / "v", standbys)
    try:
        # the victim runs alone first, so the survivor never had its task's state on disk
        wait_until(lambda: counts(broker.bootstrap) == expected(400, 100), what="victim alone")
        survivor.start()
        wait_until(
            lambda: (
                len(survivor.metadata_for_local_threads()[0].active_tasks) == 1
                and survivor.state.name == "RUNNING"
                and sum(len(m.tasks) for m in survivor.metadata_for_all_clients()) == 2
            ),
            what="one task on each instance",
        )
        (own,) = survivor.metadata_for_local_threads()[0].active_tasks
        lost = "0_1" if own == "0_0" else "0_0"
        lost_partition = int(lost.split("_")[1])
        if standbys:
            wait_until(
                lambda: survivor.metadata_for_local_threads()[0].standby_lags == {lost: 0},
                what="the standby on the survivor caught up",
            )
        applied_before = survivor.metadata_for_local_threads()[0].standby_records_applied
        changelog_before = changelog_records(broker.bootstrap, lost_partition)
        produce(broker.bootstrap, "events", events(200, keys=100))
        final = Counter(expected(400, 100)) + Counter(expected(200, 100))
        wait_until(lambda: counts(broker.bootstrap) == dict(final), what="counts before the loss")
        in_changelog = changelog_records(broker.bootstrap, lost_partition)
        assert in_changelog > changelog_before
        if standbys:
            # the standby follows the active: each new changelog record applied, lag 0
            def followed() -> bool:
                meta = survivor.metadata_for_local_threads()[0]
                return (
                    meta.standby_tasks == (lost,)
                    and meta.standby_lags == {lost: 0}
                    and meta.standby_records_applied - applied_before
                    == in_changelog - changelog_before
                )

            wait_until(followed, what="the standby followed the changelog")
            from streamrt.rest.metrics import registry_for, render_metrics

            def metric_shows_lag_0() -> bool:
                text = render_metrics(registry_for(survivor)).decode()
                return any(
                    line.startswith("streamrt_standby_lag_records{")
                    and f'task="{lost}"' in line
                    and 'instance_id="survivor"' in line
                    and line.endswith(" 0.0")
                    for line in text.splitlines()
                )

            wait_until(metric_shows_lag_0, timeout=20, what="the lag metric")
        else:
            assert survivor.metadata_for_local_threads()[0].standby_tasks == ()
        # the victim committed everything: the takeover re-processes nothing, counts stay exact
        wait_until(lambda: committed_input(broker.bootstrap) == 600, what="input committed")
        restored_before = survivor.metadata_for_local_threads()[0].records_restored
        victim.send_signal(signal.SIGKILL)
        victim.wait(30)
        assert survivor.remove_members(["victim"]) == {"victim-thread-1": None}
        wait_until(lambda: all_running(survivor, partitions=2), what="the survivor has both")
        restored = survivor.metadata_for_local_threads()[0].records_restored - restored_before
        ready = [e for e in seen if e["type"] == "restore_ready" and e["fields"]["task"] == lost]
        assert ready, "the lost task became active on the survivor"
        if standbys:
            assert restored == 0  # the standby was caught up: nothing to restore
            assert not [
                e for e in seen if e["type"] == "restore_started" and e["fields"]["task"] == lost
            ]
        else:
            assert restored == in_changelog  # the whole state, from the beginning
        produce(broker.bootstrap, "events", events(100, keys=100))
        final += Counter(expected(100, 100))
        wait_until(lambda: counts(broker.bootstrap) == dict(final), what="counts after takeover")
    finally:
        if victim.poll() is None:
            victim.send_signal(signal.SIGKILL)
            victim.wait(30)
        survivor.stop()


def clocked_app(settings_: dict[str, str], clock: ManualClock) -> App:
    app = App({"application.id": "counting", **settings_}, clock=clock)
    (
        app.stream("events", key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="event-counts")
        .to_stream()
        .to("event-counts-out", value_serde="int")
    )
    return app


def test_warm_up_then_probing_rebalance_moves_a_task_only_once_caught_up(
    broker_factory, tmp_path
) -> None:
    """A fresh instance joins a busy one: balance wants a task on it, but its state is far
    behind, so it gets warm-ups first; the probing rebalance then moves a warmed-up task."""
    broker = broker_factory()  # fast group timings (conftest)
    setup_topics(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, "events", events(400, keys=100))
    clock = ManualClock(1_000_000)
    # the manual clock drives commits, so no record cache: its flush waits for a commit
    extra = {
        "acceptable.recovery.lag": "10",
        "commit.interval.ms": "1",
        "statestore.cache.max.bytes": "0",
    }
    old = clocked_app({**settings(broker.bootstrap, tmp_path / "o", "old", 1), **extra}, clock)
    new = clocked_app({**settings(broker.bootstrap, tmp_path / "n", "new", 1), **extra}, clock)
    seen: list[dict[str, Any]] = []
    for app in (old, new):
        app.on_event(seen.append)
    old.start()
    try:
        wait_until(lambda: counts(broker.bootstrap) == expected(400, 100), what="old alone")
        clock.advance(10)  # commit (checkpoints) on the next loop
        time.sleep(1)
        new.start()

        def warming() -> bool:
            meta = new.metadata_for_local_threads()[0]
            # balance gives 0_1 to it; 0_1 stays on old and is warmed up on new instead
            return meta.active_tasks == () and meta.standby_tasks == ("0_1",)

        wait_until(warming, what="the new instance only warms up")
        assert old.metadata_for_local_threads()[0].active_tasks == ("0_0", "0_1")
        assert [e for e in seen if e["type"] == "probing_rebalance_scheduled"]
        wait_until(
            lambda: new.metadata_for_local_threads()[0].standby_lags == {"0_1": 0},
            what="warm-ups caught up",
        )
        clock.advance(600_000)  # probing.rebalance.interval.ms
        wait_until(
            lambda: [e for e in seen if e["type"] == "probing_rebalance"], what="probing rejoin"
        )
        wait_until(
            lambda: (
                len(new.metadata_for_local_threads()[0].active_tasks) == 1
                and all_running(old, new, partitions=2)
            ),
            what="a warmed-up task moved to the new instance",
        )
        assert new.metadata_for_local_threads()[0].records_restored == 0
        produce(broker.bootstrap, "events", events(100, keys=100))
        final = Counter(expected(400, 100)) + Counter(expected(100, 100))

        def done() -> bool:
            clock.advance(10)
            return counts(broker.bootstrap) == dict(final)

        wait_until(done, what="counts after the move")
    finally:
        old.stop()
        new.stop()
