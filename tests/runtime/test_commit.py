"""The numbered commit order, driven without a broker: membership check → flush producer →
store data → offsets → checkpoints; a refused commit checkpoints nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from streamrt.clock import ManualClock
from streamrt.runtime import App
from streamrt.runtime.engine.commit.commit import (
    CommitDeferredError,
    CommitSchedule,
    TaskMigratedError,
    commit,
)
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId
from streamrt.state import TopicPartition

CHANGELOG = TopicPartition("app-counts-changelog", 0)
INPUT = TopicPartition("in", 0)


class Journal:
    def __init__(self) -> None:
        self.steps: list[str] = []


class FakeProducer:
    def __init__(self, journal: Journal, fail: bool = False) -> None:
        self.journal, self.fail = journal, fail

    async def flush(self) -> Mapping[TopicPartition, int]:
        self.journal.steps.append("flush producer")
        if self.fail:
            raise ConnectionError("broker gone")
        return {CHANGELOG: 5, TopicPartition("out", 3): 9}


class FakeTask:
    def __init__(self, journal: Journal, name: str, fail: bool = False) -> None:
        self.journal, self.name, self.fail = journal, name, fail
        self.flushed_with: dict[TopicPartition, int] | None = None
        self.offsets = {TopicPartition(f"in-{name}", 0): 11}

    def flush_cache(self) -> None:
        self.journal.steps.append(f"flush cache {self.name}")

    def write_state(self, delivered: dict[TopicPartition, int]) -> None:
        self.journal.steps.append(f"write state {self.name}")
        if self.fail:
            raise OSError("disk full")
        self.flushed_with = delivered

    def checkpoint(self) -> None:
        self.journal.steps.append(f"checkpoint {self.name}")

    @property
    def processed(self) -> dict[TopicPartition, int]:
        return self.offsets

    def take_offsets(self) -> dict[TopicPartition, int]:
        out, self.offsets = self.offsets, {}
        return out


class FakeCommitter:
    """The group's side; ``refuse``: the commit's answer (an exception), ``dropped``: the
    membership check finds the member gone."""

    def __init__(
        self, journal: Journal, refuse: Exception | None = None, dropped: bool = False
    ) -> None:
        self.journal, self.refuse, self.dropped = journal, refuse, dropped
        self.committed: list[dict[TopicPartition, int]] = []

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.journal.steps.append("commit offsets")
        if self.refuse is not None:
            raise self.refuse
        self.committed.append(dict(offsets))

    async def check_generation(self) -> None:
        self.journal.steps.append("check generation")
        if self.dropped:
            raise TaskMigratedError("UNKNOWN_MEMBER_ID")


def test_steps_run_in_order_and_tasks_see_the_delivered_offsets() -> None:
    journal = Journal()
    tasks = [FakeTask(journal, "a"), FakeTask(journal, "b")]
    committer = FakeCommitter(journal)
    offsets = asyncio.run(commit(FakeProducer(journal), tasks, committer))
    assert journal.steps == [
        "check generation",
        "flush cache a",
        "flush cache b",
        "flush producer",
        "write state a",
        "write state b",
        "commit offsets",
        "checkpoint a",
        "checkpoint b",
    ]
    assert tasks[0].flushed_with == {CHANGELOG: 5, TopicPartition("out", 3): 9}
    assert (
        offsets
        == committer.committed[0]
        == {
            TopicPartition("in-a", 0): 11,
            TopicPartition("in-b", 0): 11,
        }
    )


def test_a_failed_producer_flush_commits_nothing() -> None:
    journal = Journal()
    tasks = [FakeTask(journal, "a")]
    committer = FakeCommitter(journal)
    with pytest.raises(ConnectionError):
        asyncio.run(commit(FakeProducer(journal, fail=True), tasks, committer))
    assert journal.steps == ["check generation", "flush cache a", "flush producer"]
    assert committer.committed == [] and tasks[0].flushed_with is None


def test_a_failed_store_flush_commits_no_offsets() -> None:
    journal = Journal()
    tasks = [FakeTask(journal, "a"), FakeTask(journal, "b", fail=True)]
    committer = FakeCommitter(journal)
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(commit(FakeProducer(journal), tasks, committer))
    assert "commit offsets" not in journal.steps
    assert committer.committed == []


def test_nothing_processed_means_no_offset_commit() -> None:
    journal = Journal()
    task = FakeTask(journal, "a")
    task.offsets = {}
    committer = FakeCommitter(journal)
    assert asyncio.run(commit(FakeProducer(journal), [task], committer)) == {}
    assert committer.committed == []


def test_a_dropped_member_writes_nothing() -> None:
    """A zombie (the group dropped it during a pause) finds out before its commit appends
    stale changelog records after the new owner's: no cache flush, no producer flush."""
    journal = Journal()
    tasks = [FakeTask(journal, "a")]
    with pytest.raises(TaskMigratedError):
        asyncio.run(commit(FakeProducer(journal), tasks, FakeCommitter(journal, dropped=True)))
    assert journal.steps == ["check generation"]


@pytest.mark.parametrize(
    "refusal", [TaskMigratedError("ILLEGAL_GENERATION"), CommitDeferredError("REBALANCING")]
)
def test_a_refused_commit_checkpoints_nothing(refusal: Exception) -> None:
    journal = Journal()
    tasks = [FakeTask(journal, "a")]
    committer = FakeCommitter(journal, refuse=refusal)
    if isinstance(refusal, TaskMigratedError):
        with pytest.raises(TaskMigratedError):
            asyncio.run(commit(FakeProducer(journal), tasks, committer))
    else:  # kept for the next commit: nothing committed yet
        assert asyncio.run(commit(FakeProducer(journal), tasks, committer)) == {}
    assert journal.steps[-1] == "commit offsets"
    assert not any(step.startswith("checkpoint") for step in journal.steps)


def counting_task(tmp_path: Path) -> StreamTask:
    app = App({"application.id": "app"})
    app.stream("in", key_serde="str", value_serde="str").group_by_key().count(store="counts")
    sub = app.topology.subtopologies("app")[0]

    class Sent:
        def send(self, *args: object) -> None:
            pass

    task = StreamTask(TaskId(0, 0), sub, app.topology, "app", tmp_path, Sent())
    task.open()
    return task


def test_real_task_store_offset_comes_from_the_producer_flush(tmp_path: Path) -> None:
    """A real StreamTask behind the protocol: the store records the changelog offset step 2
    reported, once the input offset is committed."""
    task = counting_task(tmp_path)
    task.process("in", 41, 1000, b"k", b"v")
    journal = Journal()
    committer = FakeCommitter(journal)
    asyncio.run(commit(FakeProducer(journal), [task], committer))
    assert task.state.position(CHANGELOG) == 5
    assert committer.committed == [{INPUT: 42}]
    task.close()


def test_real_task_keeps_its_checkpoint_when_the_commit_is_refused(tmp_path: Path) -> None:
    """The zombie's chain: its data reaches the store, but the store stays at the changelog
    offset of the last accepted commit, so a restore replays what another owner appended
    after it. A deferred commit's ends are checkpointed by the next accepted one."""
    task = counting_task(tmp_path)
    task.process("in", 41, 1000, b"k", b"v")
    journal = Journal()
    asyncio.run(commit(FakeProducer(journal), [task], FakeCommitter(journal)))
    assert task.state.position(CHANGELOG) == 5

    task.process("in", 42, 1000, b"k", b"v")
    later = {CHANGELOG: 9}

    class Later(FakeProducer):
        async def flush(self) -> Mapping[TopicPartition, int]:
            return later

    deferred = FakeCommitter(journal, refuse=CommitDeferredError("REBALANCE_IN_PROGRESS"))
    asyncio.run(commit(Later(journal), [task], deferred))
    assert task.state.position(CHANGELOG) == 5  # data written, offset not moved
    later = {}  # nothing new delivered: the next accepted commit checkpoints the kept end
    task.process("in", 43, 1000, b"k", b"v")
    asyncio.run(commit(Later(journal), [task], FakeCommitter(journal)))
    assert task.state.position(CHANGELOG) == 9

    task.process("in", 44, 1000, b"k", b"v")
    later = {CHANGELOG: 12}
    migrated = FakeCommitter(journal, refuse=TaskMigratedError("ILLEGAL_GENERATION"))
    with pytest.raises(TaskMigratedError):
        asyncio.run(commit(Later(journal), [task], migrated))
    assert task.state.position(CHANGELOG) == 9
    task.discard_uncommitted()  # the dirty close
    task.close()
    reopened = counting_task(tmp_path)
    assert reopened.state.positions() == {CHANGELOG: 9}
    assert reopened.stores["counts"].get("k") is not None  # the data written, kept (ALOS)
    reopened.close()


def test_a_deferred_commit_sends_its_offsets_with_the_next_one(tmp_path: Path) -> None:
    """A commit refused during a rebalance (or with the coordinator away) while the partitions
    stay ours: its input offsets go with the next commit, even when nothing was processed
    since, and the checkpoint waits for that commit. Before: the offsets were taken from the
    task and dropped (a streams-group member keeps none; the classic member kept them but the
    next commit, with no new offsets, never called it), so the group's offset stayed behind
    for good while the next commit checkpointed the store past it."""
    task = counting_task(tmp_path)
    task.process("in", 41, 1000, b"k", b"v")
    journal = Journal()
    deferred = FakeCommitter(journal, refuse=CommitDeferredError("REBALANCE_IN_PROGRESS"))
    assert asyncio.run(commit(FakeProducer(journal), [task], deferred)) == {}
    assert task.state.position(CHANGELOG) is None

    class NothingNew(FakeProducer):
        async def flush(self) -> Mapping[TopicPartition, int]:
            return {}

    committer = FakeCommitter(journal)
    assert asyncio.run(commit(NothingNew(journal), [task], committer)) == {INPUT: 42}
    assert committer.committed == [{INPUT: 42}]
    assert task.state.position(CHANGELOG) == 5
    assert asyncio.run(commit(NothingNew(journal), [task], committer)) == {}  # sent once
    task.close()


def test_a_task_left_out_of_a_commit_keeps_the_ends_that_commit_flushed(tmp_path: Path) -> None:
    """A revocation commits only the revoked task, but its producer flush reports the
    deliveries of every task: the one kept checkpoints its own end at its next commit, so a
    clean restart restores nothing (before: the checkpoint stayed at 0 while the store held
    the data, and the restarted static instance restored its whole changelog)."""
    kept = counting_task(tmp_path)
    kept.process("in", 41, 1000, b"k", b"v")
    journal = Journal()
    revoked = FakeTask(journal, "revoked")
    asyncio.run(commit(FakeProducer(journal), [revoked], FakeCommitter(journal), [kept]))
    assert revoked.flushed_with == {CHANGELOG: 5, TopicPartition("out", 3): 9}
    assert kept.state.position(CHANGELOG) is None  # its input offsets are not committed yet

    class NothingNew(FakeProducer):
        async def flush(self) -> Mapping[TopicPartition, int]:
            return {}

    committer = FakeCommitter(journal)
    asyncio.run(commit(NothingNew(journal), [kept], committer))
    assert committer.committed == [{INPUT: 42}]
    assert kept.state.position(CHANGELOG) == 5
    kept.close()
    reopened = counting_task(tmp_path)
    assert reopened.state.positions() == {CHANGELOG: 5}
    reopened.close()


def test_commit_schedule_follows_the_injected_clock() -> None:
    clock = ManualClock(1_000)
    schedule = CommitSchedule(clock, interval_ms=100)
    assert not schedule.due()
    clock.advance(99)
    assert not schedule.due()
    clock.advance(1)
    assert schedule.due()
    schedule.committed()
    clock.advance(50)
    assert not schedule.due()
    clock.advance(50)
    assert schedule.due()
