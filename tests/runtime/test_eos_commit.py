"""The exactly-once commit order, driven without a broker (the transactional collector is the
one fake): flush → offsets into the transaction → commit → stores (offset after the marker)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.eos import abort_transaction, commit_transaction
from streamrt.state import TopicPartition

CHANGELOG = TopicPartition("app-counts-changelog", 0)


class JournalSink:
    """A transactional collector (``TransactionalSink``) that journals each step: records wait
    until the drain, which begins the transaction; each gets the next changelog offset."""

    def __init__(self, journal: list[str], fail_commit: bool = False) -> None:
        self.journal, self.fail_commit = journal, fail_commit
        self.in_transaction = False
        self.producer: Any = None
        self._queue: list[str] = []
        self._next_offset = 0

    def send(self, topic: str, key: Any, value: Any, part: Any, ts: int, h: Any = None) -> None:
        self._queue.append(topic)

    async def begin(self) -> None:
        if not self.in_transaction:
            self.journal.append("begin")
            self.in_transaction = True

    async def drain(self) -> None:
        if self._queue:
            await self.begin()
        for topic in self._queue:
            self.journal.append(f"send {topic}")
            self._next_offset += 1
        self._queue.clear()

    async def flush(self) -> dict[TopicPartition, int]:
        await self.drain()
        self.journal.append("flush")
        return {CHANGELOG: self._next_offset} if self._next_offset else {}

    async def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.journal.append(f"offsets {group_id} {sorted(offsets.values())}")

    async def commit(self) -> None:
        self.journal.append("commit")
        if self.fail_commit:
            raise RuntimeError("ProducerFenced")
        self.in_transaction = False

    async def abort(self) -> None:
        self.journal.append("abort")

    def reset(self, producer: Any = None) -> None:
        self._queue.clear()
        self.in_transaction = False


class FakeTask:
    def __init__(self, journal: list[str]) -> None:
        self.journal = journal
        self.offsets = {TopicPartition("in", 0): 11}
        self.flushed_with: dict[TopicPartition, int] | None = None
        self.discarded = False

    def flush_cache(self) -> None:
        self.journal.append("flush cache")

    def flush_state(self, delivered: dict[TopicPartition, int]) -> None:
        self.journal.append("flush state")
        self.flushed_with = delivered

    def take_offsets(self) -> dict[TopicPartition, int]:
        out, self.offsets = self.offsets, {}
        return out

    def discard_uncommitted(self) -> None:
        self.journal.append("discard")
        self.discarded = True


def test_commit_order_and_the_offset_after_the_marker() -> None:
    journal: list[str] = []
    collector = JournalSink(journal)
    task = FakeTask(journal)

    async def go() -> dict[TopicPartition, int]:
        collector.send(CHANGELOG.topic, b"k", b"1", 0, 1)
        collector.send(CHANGELOG.topic, b"k", b"2", 0, 1)
        await collector.drain()
        return await commit_transaction(collector, [task], "app")

    offsets = asyncio.run(go())
    assert offsets == {TopicPartition("in", 0): 11}
    assert journal == [
        "begin",
        f"send {CHANGELOG.topic}",
        f"send {CHANGELOG.topic}",
        "flush cache",
        "flush",
        "offsets app [11]",
        "commit",
        "flush state",
    ]
    # last record at offset 1, the commit marker at 2: the store resumes at 3
    assert task.flushed_with == {CHANGELOG: 3}
    assert not collector.in_transaction


def test_input_without_output_still_commits_its_offsets_in_a_transaction() -> None:
    journal: list[str] = []
    collector = JournalSink(journal)
    asyncio.run(commit_transaction(collector, [FakeTask(journal)], "app"))
    assert journal == [
        "flush cache",
        "flush",
        "begin",
        "offsets app [11]",
        "commit",
        "flush state",
    ]


def test_nothing_processed_means_no_transaction() -> None:
    journal: list[str] = []
    collector = JournalSink(journal)
    task = FakeTask(journal)
    task.offsets = {}
    assert asyncio.run(commit_transaction(collector, [task], "app")) == {}
    assert journal == ["flush cache", "flush"]


def test_a_failed_commit_never_flushes_the_stores_and_the_abort_discards() -> None:
    journal: list[str] = []
    collector = JournalSink(journal, fail_commit=True)
    task = FakeTask(journal)

    async def go() -> None:
        collector.send("out", b"k", b"v", None, 1)
        await collector.drain()
        with pytest.raises(RuntimeError):
            await commit_transaction(collector, [task], "app")
        assert await abort_transaction(collector, [task])

    asyncio.run(go())
    assert "flush state" not in journal
    assert journal[-2:] == ["discard", "abort"]
    assert task.flushed_with is None and task.discarded
    assert not collector.in_transaction


def test_guarantee_names() -> None:
    eos = StreamsConfig.from_mapping(
        {"application.id": "a", "processing.guarantee": "exactly_once_v2"}
    )
    assert eos.exactly_once and eos.commit_interval_ms == 100  # Kafka Streams' EOS default
    beta = StreamsConfig.from_mapping(
        {"application.id": "a", "processing.guarantee": "exactly_once_beta"}
    )
    assert beta.processing_guarantee == "exactly_once_v2"
    slow = StreamsConfig.from_mapping(
        {
            "application.id": "a",
            "processing.guarantee": "exactly_once_v2",
            "commit.interval.ms": "1000",
        }
    )
    assert slow.commit_interval_ms == 1000
    alo = StreamsConfig.from_mapping({"application.id": "a"})
    assert not alo.exactly_once and alo.commit_interval_ms == 30_000
    with pytest.raises(ConfigError, match=r"removed in Kafka 4\.0.*exactly_once_v2"):
        StreamsConfig.from_mapping({"application.id": "a", "processing.guarantee": "exactly_once"})
    with pytest.raises(ConfigError, match="not supported"):
        StreamsConfig.from_mapping({"application.id": "a", "processing.guarantee": "maybe"})
