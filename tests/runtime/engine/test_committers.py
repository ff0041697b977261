"""The exactly-once committer without a broker: a failed commit aborts and discards the staged
writes; a lost transaction closes the tasks dirty, renews a fenced producer, reopens the tasks
and rewinds the input (see :mod:`.rig`; only the Kafka clients are fakes)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from streamrt.admin.connection import AdminConnectionError
from streamrt.runtime.engine.clients.rdkafka_txn import ProducerFencedError
from streamrt.runtime.engine.eos import TransactionLostError
from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.runtime.exception_handlers import RecordFailedError
from streamrt.topic_partition import TopicPartition
from tests.runtime.engine.rig import CHANGELOG, INPUT, Rig, RigTxnProducer, count, rig


def running_task(r: Rig) -> StreamTask:
    task = r.tasks.task_for(INPUT)
    assert task is not None
    return task


async def started(r: Rig) -> None:
    r.assign(["0_0"])
    await r.listener.on_partitions_assigned([INPUT])
    assert r.tasks.all_running


def test_a_committed_transaction_carries_output_and_offsets(tmp_path: Path) -> None:
    logs: dict[TopicPartition, list[Any]] = {}
    producers: list[RigTxnProducer] = []
    r = rig(tmp_path, 1, logs, producers)

    async def scenario() -> None:
        await started(r)
        running_task(r).process("in", 41, 1000, b"k", b"v")
        async with r.thread.commit_lock:
            await r.committer.commit(r.tasks)
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert logs[CHANGELOG] == [(b"k", count(1))]
    assert producers[0].client.offsets_sent == [{INPUT: 42}] and r.membership.commits == []
    assert ("commit", {"offsets": {"in-0": 42}}) in r.events


def test_a_failed_commit_aborts_and_discards_the_staged_writes(tmp_path: Path) -> None:
    logs: dict[TopicPartition, list[Any]] = {}
    producers: list[RigTxnProducer] = []
    r = rig(tmp_path, 1, logs, producers)

    async def scenario() -> None:
        await started(r)
        running_task(r).process("in", 41, 1000, b"k", b"v")
        producers[0].client.fail_commit = True
        with pytest.raises(TransactionLostError, match="broker gone"):
            async with r.thread.commit_lock:
                await r.committer.commit(r.tasks)
        assert producers[0].client.aborts == 1 and "commit" not in r.types()
        assert "transaction_aborted" in r.types()
        running_task(r).process("in", 41, 1000, b"k", b"v")  # the staged count 1 is gone
        async with r.thread.commit_lock:
            await r.committer.commit(r.tasks)
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert logs[CHANGELOG] == [(b"k", count(1))]


def test_a_lost_transaction_reopens_the_tasks_with_a_new_producer_and_rewinds(
    tmp_path: Path,
) -> None:
    logs: dict[TopicPartition, list[Any]] = {}
    producers: list[RigTxnProducer] = []
    r = rig(tmp_path, 1, logs, producers)
    r.membership.committed_offsets[INPUT] = 40
    lost = ProducerFencedError("commit_transaction: producer fenced")

    async def scenario() -> None:
        await started(r)
        r.consumer.seeks.clear()  # the assignment's seek to the committed offset
        running_task(r).process("in", 40, 1000, b"k", b"v")
        running_task(r).process("in", 41, 1001, b"k", b"v")
        await r.committer.collector.drain()
        producers[0].client.fenced = True  # a newer incarnation bumped the epoch
        assert r.committer.recovers(lost)
        async with r.thread.commit_lock:
            await r.committer.recover(lost, r.tasks)
        assert r.tasks.all_running and set(r.tasks.tasks) == {"0_0"}
        running_task(r).process("in", 40, 1000, b"k", b"v")  # read again after the rewind
        async with r.thread.commit_lock:
            await r.committer.commit(r.tasks)
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert len(producers) == 2 and producers[0].stopped and producers[1].started
    assert r.committer.collector.producer is producers[1]
    assert r.consumer.seeks == [(INPUT, 40)]
    # the lost transaction's two updates are gone from store and changelog: the count
    # starts again from the committed state
    assert logs[CHANGELOG] == [(b"k", count(1))]
    assert ("tasks_lost", {"tasks": ["0_0"], "error": repr(lost)}) in r.events


def test_a_record_at_timestamp_zero_is_refused_by_name_and_nothing_of_it_is_sent(
    tmp_path: Path,
) -> None:
    """librdkafka cannot write CreateTime 0 inside a transaction: the task's send refuses it,
    naming the input record, before anything of it reaches the producer."""
    logs: dict[TopicPartition, list[Any]] = {}
    producers: list[RigTxnProducer] = []
    r = rig(tmp_path, 1, logs, producers)

    async def scenario() -> None:
        await started(r)
        running_task(r).process("in", 40, 1000, b"k", b"v")
        with pytest.raises(RecordFailedError) as failed:  # a new key: its count is at 0
            running_task(r).process("in", 41, 0, b"z", b"v")
        message = str(failed.value)
        assert message.startswith("production of in-0@41 failed (task 0_0")
        assert f"{CHANGELOG.topic}-0 has timestamp 0" in message
        await r.committer.collector.drain()
        assert [v for _tp, (_k, v) in producers[0].client.pending] == [count(1)]
        await r.tasks.close_all()

    asyncio.run(scenario())


def test_a_lost_transactions_recovery_waits_for_the_broker_instead_of_failing(
    tmp_path: Path,
) -> None:
    """A transaction given up at once because its broker connection dropped is recovered
    while the broker may still be down: the membership check is asked again until the broker
    answers, and only then is the producer renewed (the thread does not die and get replaced).
    The unreachable broker is the one fake here: its first checks fail to connect."""
    logs: dict[TopicPartition, list[Any]] = {}
    producers: list[RigTxnProducer] = []
    r = rig(tmp_path, 1, logs, producers)
    order: list[str] = []
    lost = ProducerFencedError("flush: a broker connection dropped during the transaction")

    async def check_membership() -> None:
        order.append(f"check, producers {len(producers)}")
        if len(order) < 3:
            raise AdminConnectionError("cannot connect to 127.0.0.1:9092: refused")

    r.membership.check_membership = check_membership  # type: ignore[method-assign]

    async def scenario() -> None:
        await started(r)
        running_task(r).process("in", 40, 1000, b"k", b"v")
        async with r.thread.commit_lock:
            await r.committer.recover(lost, r.tasks)
        assert r.tasks.all_running

    asyncio.run(scenario())
    assert order == ["check, producers 1"] * 3  # the new producer came after the third
    assert len(producers) == 2 and producers[1].started
