"""The member listener's reassignment on the default path, without a broker (see :mod:`.rig`):
the main consumer's assignment follows the member's, a partition that stays keeps its position
and its pause, a new one starts at its committed offset."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiokafka.structs import TopicPartition as KafkaTP

from tests.runtime.engine.rig import INPUT, rig

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
