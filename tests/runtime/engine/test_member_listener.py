"""The member listener's reassignment on the default path, without a broker (see :mod:`.rig`):
the main consumer's assignment follows the member's, a partition that stays keeps its position
and its pause, a new one starts at its committed offset."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.topic_partition import TopicPartition
from tests.runtime.engine.rig import CHANGELOG, INPUT, RigTxnProducer, count, rig, until_running

SECOND = KafkaTP(INPUT.topic, 1)


def test_a_new_partition_starts_at_its_committed_offset_and_one_that_stays_keeps_its_place(
    tmp_path: Path,
) -> None:
    r = rig(tmp_path, 1, {})
    r.membership.committed_offsets[INPUT] = 5
    r.membership.committed_offsets[SECOND] = 3

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        assert r.consumer.assignment() == {INPUT} and r.consumer.seeks == [(INPUT, 5)]
        r.consumer.positions[INPUT] = 9  # fetched up to 9
        r.consumer.pause(INPUT)  # e.g. its task waits for input elsewhere
        r.consumer.seeks.clear()
        r.assign(["0_0", "0_1"])  # a cooperative second round adds 0_1
        await r.listener.on_partitions_assigned([SECOND])
        assert r.consumer.assignment() == {INPUT, SECOND}
        assert sorted(r.consumer.seeks) == [(INPUT, 9), (SECOND, 3)]  # not back to 5
        assert INPUT in r.consumer.paused() and SECOND not in r.consumer.paused()
        assert set(r.tasks.tasks) == {"0_0", "0_1"}
        r.assign(["0_1"])  # 0_0 moves away: its partition leaves the consumer
        await r.listener.on_partitions_revoked([INPUT])
        assert r.consumer.assignment() == {SECOND} and set(r.tasks.tasks) == {"0_1"}
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert r.thread.rebalances == 2


def test_an_assignment_that_holds_tasks_back_asks_for_the_second_round_itself(
    tmp_path: Path,
) -> None:
    """The leader held a task back (cooperative: its previous owner must revoke it first). This
    member asks for the second round itself and does not wait for the revoking member to: on a
    3-broker Apache Kafka that member was SIGKILLed between the two rounds, came back static
    with its stored assignment and nothing to revoke, and two partitions had no owner until the
    run ended (no output for 90 s)."""
    r = rig(tmp_path, 1, {})

    async def scenario() -> None:
        r.assign([], followup=True)  # nothing yet: 0_0 waits for its previous owner
        await r.listener.on_partitions_assigned([])
        assert r.membership.rejoins == ["the leader held tasks back for a second round"]
        assert r.thread.state.name != "RUNNING"  # the rebalance is not over
        r.assign(["0_0"])  # the second round hands it over
        await r.listener.on_partitions_assigned([INPUT])
        assert len(r.membership.rejoins) == 1  # nothing held back: no third round
        await r.tasks.close_all()

    asyncio.run(scenario())


def test_a_failed_exactly_once_commit_on_revocation_reopens_the_kept_tasks_where_committed(
    tmp_path: Path,
) -> None:
    """Under exactly_once_v2 the revocation's commit holds every task's output in one
    transaction: when it fails, the tasks that stay lost their uncommitted work as well. They
    close dirty and start again at the committed offsets; before, they went on past input whose
    counts the abort had dropped (those records were never counted)."""
    logs: dict[TopicPartition, list[Any]] = {}
    producers: list[RigTxnProducer] = []
    r = rig(tmp_path, 1, logs, producers)
    r.membership.committed_offsets[INPUT] = 40
    r.membership.committed_offsets[SECOND] = 7

    async def scenario() -> None:
        r.assign(["0_0", "0_1"])
        await r.listener.on_partitions_assigned([INPUT, SECOND])
        await until_running(r)
        kept = r.tasks.task_for(INPUT)
        assert kept is not None
        kept.process("in", 40, 1000, b"k", b"v")  # counted, not committed
        r.consumer.positions[INPUT] = 41
        producers[0].client.fail_commit = True  # the revocation's commit fails
        r.consumer.seeks.clear()
        r.assign(["0_0"])  # 0_1 moves away
        await r.listener.on_partitions_revoked([SECOND])
        await r.listener.on_partitions_assigned([])  # the member goes on as after any sync
        await until_running(r)
        assert r.consumer.assignment() == {INPUT}
        assert r.consumer.positions[INPUT] == 40  # the aborted input is read again
        again = r.tasks.task_for(INPUT)
        assert again is not None and again is not kept  # reopened from its checkpoint
        again.process("in", 40, 1000, b"k", b"v")
        async with r.thread.commit_lock:
            await r.committer.commit(r.tasks)
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert logs[CHANGELOG] == [(b"k", count(1))]  # counted once, committed once
    assert ("tasks_lost", {"tasks": ["0_0"], "error": "KafkaException(...)"}) in [
        (t, {**kv, "error": "KafkaException(...)"}) for t, kv in r.events
    ]


def test_a_stop_noticed_while_the_assignment_is_looked_up_opens_no_task(tmp_path: Path) -> None:
    """The thread went to PENDING_SHUTDOWN while the assigned callback awaited the committed
    offsets: it opens no task and does not fail (before: an illegal PENDING_SHUTDOWN →
    PARTITIONS_ASSIGNED transition raised in the callback and stopped the group member; a CI
    run's static instance stopped right after its first output this way)."""
    from streamrt.runtime.metadata import ThreadState

    r = rig(tmp_path, 1, {})
    looked_up = r.membership.committed

    async def stop_during_lookup(partitions: Any) -> dict[TopicPartition, int]:
        r.thread.transition(ThreadState.PENDING_SHUTDOWN)
        return await looked_up(partitions)

    r.membership.committed = stop_during_lookup  # type: ignore[method-assign]

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        assert r.thread.state is ThreadState.PENDING_SHUTDOWN
        assert not r.tasks.tasks
        await r.tasks.close_all()

    asyncio.run(scenario())
