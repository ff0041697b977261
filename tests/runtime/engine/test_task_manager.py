"""The task lifecycle of a stream thread, driven without a broker (see :mod:`.rig`)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.runtime import ThreadState
from streamrt.state import read_checkpoint_hint
from tests.runtime.engine.rig import APP, CHANGELOG, INPUT, count, rig, until_running

# -- the tests -------------------------------------------------------------------------------


def test_an_assignment_creates_the_task_and_restores_it_before_its_input_resumes(
    tmp_path: Path,
) -> None:
    logs: dict[KafkaTP, list[Any]] = {
        CHANGELOG: [(b"a", count(1)), (b"b", count(1)), (b"a", count(2)), (b"a", count(3))]
    }
    r = rig(tmp_path, 1, logs)

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        assert set(r.tasks.tasks) == {"0_0"} and r.tasks.restoring == {"0_0"}
        assert INPUT in r.consumer.paused() and r.tasks.task_for(INPUT) is None
        assert r.thread.state is ThreadState.PARTITIONS_ASSIGNED
        await until_running(r)
        assert INPUT not in r.consumer.paused()
        assert r.thread.state is ThreadState.RUNNING
        task = r.tasks.task_for(INPUT)
        assert task is not None
        task.process("in", 7, 1000, b"a", b"x")  # the restored count goes on from 3
        await r.committer.collector.drain()
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert logs[CHANGELOG][-1] == (b"a", count(4))
    meta = r.tasks.metadata()
    assert meta["records_restored"] == 4 and meta["active_tasks"] == ()
    assert r.types().index("restore_started") < r.types().index("restore_ready")
    assert ("restore_complete", {"task": "0_0", "records": 4}) in [
        (t, {k: kv[k] for k in ("task", "records")}) for t, kv in r.events if "records" in kv
    ]


def test_an_empty_changelog_means_the_task_runs_at_once(tmp_path: Path) -> None:
    r = rig(tmp_path, 1, {})

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        assert r.tasks.all_running and r.thread.state is ThreadState.RUNNING
        assert INPUT not in r.consumer.paused()
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert "restore_started" not in r.types()
    assert r.tasks.metadata()["records_restored"] == 0


def test_a_revocation_commits_what_was_processed_then_closes_the_task(tmp_path: Path) -> None:
    logs: dict[KafkaTP, list[Any]] = {}
    r = rig(tmp_path, 1, logs)

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        task = r.tasks.task_for(INPUT)
        assert task is not None
        task.process("in", 41, 1000, b"k", b"v")
        task.process("in", 42, 1001, b"k", b"v")
        await r.listener.on_partitions_revoked([INPUT])

    asyncio.run(scenario())
    assert r.membership.commits == [{INPUT: 43}]  # committed after the stores were flushed
    assert logs[CHANGELOG] == [(b"k", count(1)), (b"k", count(2))]
    assert r.tasks.tasks == {} and r.thread.rebalances == 1
    # closed: the directory is free and its checkpoint names the changelog offset reached
    assert read_checkpoint_hint(tmp_path / APP / "0_0") == {"counts": 2}
    assert r.types().index("commit") < r.types().index("revocation") + 2
    assert r.tasks.metadata()["records_processed"] == 2


def test_a_standby_follows_its_changelog_and_the_active_it_becomes_restores_nothing(
    tmp_path: Path,
) -> None:
    logs: dict[KafkaTP, list[Any]] = {CHANGELOG: [(b"a", count(1)), (b"a", count(2))]}
    r = rig(tmp_path, 1, logs)

    async def scenario() -> None:
        r.assign([], ["0_0"])
        await r.listener.on_partitions_assigned([])
        assert r.tasks.tasks == {} and r.tasks.standbys.task_ids == ("0_0",)
        for _ in range(3):
            await r.tasks.step()
        assert r.tasks.standbys.lags() == {"0_0": 0}
        standby_state = r.tasks.standbys.tasks["0_0"].state
        r.assign(["0_0"], [])  # promoted: the active task takes the standby's open stores
        await r.listener.on_partitions_assigned([INPUT])
        assert r.tasks.standbys.task_ids == () and r.tasks.all_running
        assert r.tasks.tasks["0_0"].state is standby_state  # recycled, not reopened
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert [t for t in r.types() if t.startswith("standby_")] == [
        "standby_created",
        "standby_opened",
        "standby_released",
        "standby_promoted",
    ]
    meta = r.tasks.metadata()
    assert meta["standby_records_applied"] == 2 and meta["records_restored"] == 0


def test_a_task_whose_directory_is_locked_opens_once_the_owner_closes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs: dict[KafkaTP, list[Any]] = {}
    owner, successor = rig(tmp_path, 1, logs), rig(tmp_path, 2, logs)

    async def scenario() -> None:
        owner.assign(["0_0"])
        await owner.listener.on_partitions_assigned([INPUT])
        successor.assign(["0_0"])
        await successor.listener.on_partitions_assigned([INPUT])
        assert successor.tasks.locked == {"0_0"} and successor.tasks.open_tasks() == []
        assert successor.thread.state is ThreadState.PARTITIONS_ASSIGNED
        await successor.tasks.step()  # still locked: retried, warned once
        assert successor.tasks.locked == {"0_0"} and INPUT in successor.consumer.paused()
        await owner.listener.on_partitions_revoked([INPUT])
        await successor.tasks.step()
        assert successor.tasks.locked == set() and INPUT not in successor.consumer.paused()
        assert successor.thread.state is ThreadState.RUNNING
        await successor.tasks.close_all()

    with caplog.at_level(logging.WARNING, logger="streamrt.runtime.engine.tasks.task_manager"):
        asyncio.run(scenario())
    warnings = [r for r in caplog.records if r.getMessage() == "task state is locked, will retry"]
    assert len(warnings) == 1


def test_a_successor_opens_its_expected_tasks_while_it_joins(tmp_path: Path) -> None:
    """A hand-off successor opens the old thread's tasks as soon as their locks are free,
    before its assignment; the assignment then finds the task open (no second open) and runs
    it; an expected task the assignment does not give is closed and its directory freed."""
    logs: dict[KafkaTP, list[Any]] = {}
    owner, successor, other = rig(tmp_path, 1, logs), rig(tmp_path, 2, logs), rig(tmp_path, 3, logs)

    async def scenario() -> None:
        owner.assign(["0_0"])
        await owner.listener.on_partitions_assigned([INPUT])
        ahead = asyncio.create_task(successor.tasks.open_ahead(["0_0", "0_1"]))
        await asyncio.sleep(0.1)
        assert "0_0" not in successor.tasks.tasks  # still the owner's: waits for its lock
        await owner.listener.on_partitions_revoked([INPUT])  # the old process closes it
        await asyncio.wait_for(ahead, 10)
        successor.assign(["0_0"])
        await successor.listener.on_partitions_assigned([INPUT])
        assert successor.tasks.locked == set()
        assert successor.thread.state is ThreadState.RUNNING
        other.assign(["0_1"])  # 0_1 was opened ahead, then not assigned: closed, lock free
        await other.tasks.assign(["0_1"], ())
        assert other.tasks.locked == set() and "0_1" in other.tasks.tasks
        await successor.tasks.close_all()
        await other.tasks.close_all()

    asyncio.run(scenario())
    assert "stores_opened_ahead" in [kv.get("mark") for _, kv in successor.events]


def test_opening_ahead_stops_at_the_thread_s_stop_and_leaves_no_lock(tmp_path: Path) -> None:
    """A successor stopped while it opens ahead closes what it opened: nothing stays locked."""
    logs: dict[KafkaTP, list[Any]] = {}
    successor, after = rig(tmp_path, 1, logs), rig(tmp_path, 2, logs)

    async def scenario() -> None:
        ahead = asyncio.create_task(successor.tasks.open_ahead(["0_0"]))
        await asyncio.wait_for(ahead, 10)
        await successor.tasks.close_all()  # stopped before any assignment
        after.assign(["0_0"])
        await after.listener.on_partitions_assigned([INPUT])
        assert after.tasks.locked == set()
        await after.tasks.close_all()

    asyncio.run(scenario())


def test_an_assignment_without_a_task_closes_it(tmp_path: Path) -> None:
    """A rebalance that revoked nothing from this thread (its partitions were not revoked,
    the leader moved the task anyway) still closes the task and frees its directory."""
    logs: dict[KafkaTP, list[Any]] = {}
    first, second = rig(tmp_path, 1, logs), rig(tmp_path, 2, logs)

    async def scenario() -> None:
        first.assign(["0_0"])
        await first.listener.on_partitions_assigned([INPUT])
        first.assign([])
        await first.listener.on_partitions_assigned([])
        assert first.tasks.tasks == {} and first.thread.state is ThreadState.RUNNING
        second.assign(["0_0"])
        await second.listener.on_partitions_assigned([INPUT])
        assert second.tasks.all_running
        await second.tasks.close_all()

    asyncio.run(scenario())
