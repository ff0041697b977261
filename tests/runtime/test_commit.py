"""The numbered commit order, driven without a broker: flush producer → stores → offsets."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from streamrt.clock import ManualClock
from streamrt.runtime import App
from streamrt.runtime.engine.commit import CommitSchedule, commit
from streamrt.runtime.engine.task import StreamTask, TaskId
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

    def flush_state(self, delivered: dict[TopicPartition, int]) -> None:
        self.journal.steps.append(f"flush state {self.name}")
        if self.fail:
            raise OSError("disk full")
        self.flushed_with = delivered

    def take_offsets(self) -> dict[TopicPartition, int]:
        out, self.offsets = self.offsets, {}
        return out


class FakeCommitter:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.committed: list[dict[TopicPartition, int]] = []

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.journal.steps.append("commit offsets")
        self.committed.append(dict(offsets))


def test_steps_run_in_order_and_tasks_see_the_delivered_offsets() -> None:
    journal = Journal()
    tasks = [FakeTask(journal, "a"), FakeTask(journal, "b")]
    committer = FakeCommitter(journal)
    offsets = asyncio.run(commit(FakeProducer(journal), tasks, committer))
    assert journal.steps == [
        "flush cache a",
        "flush cache b",
        "flush producer",
        "flush state a",
        "flush state b",
        "commit offsets",
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
    assert journal.steps == ["flush cache a", "flush producer"]
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


def test_real_task_store_offset_comes_from_the_producer_flush(tmp_path: Path) -> None:
    """A real StreamTask behind the protocol: the store records the changelog offset step 1
    reported, and the input offset is committed only after that."""
    app = App({"application.id": "app"})
    app.stream("in", key_serde="str", value_serde="str").group_by_key().count("counts")
    sub = app.topology.subtopologies("app")[0]

    class Sent:
        def send(self, *args: object) -> None:
            pass

    task = StreamTask(TaskId(0, 0), sub, app.topology, "app", tmp_path, Sent())
    task.open()
    task.process("in", 41, 1000, b"k", b"v")
    journal = Journal()
    committer = FakeCommitter(journal)
    asyncio.run(commit(FakeProducer(journal), [task], committer))
    assert task.state.position(CHANGELOG) == 5
    assert committer.committed == [{INPUT: 42}]
    task.close()


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
