"""Per-task assignment epochs of streams groups over real sockets (raw StreamsGroupHeartbeat
and OffsetCommit v9), on the embedded broker and on Apache Kafka 4.3.1 (``any_broker``).

The Kafka Streams CI case: two members split the tasks of a count-with-repartition topology,
one leaves, the group epoch bumps and the survivor runs every task; the commit it sent at its
previous epoch is accepted for a task it ran then and refused for a task it gained from the
leaver at the new epoch. Both brokers answer alike (measured: Apache Kafka 4.3.1 carries
KAFKA-19779's per-task assignment epochs; the embedded broker refused both before)."""

from __future__ import annotations

import asyncio
from typing import Any

from streamrt.admin.connection import BrokerConnection
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from tests.apache_kafka.support import BrokerEndpoint
from tests.broker.test_streams_groups_wire import APP, REPARTITION, _active, _beat, _run
from tests.kafka_helpers import create_topic

#: the input topic of each subtopology of the wire test's topology
_INPUT = {"0": "words", "1": REPARTITION}


def _tasks(resp: Any) -> set[tuple[str, int]]:
    return {(t["subtopology_id"], p) for t in _active(resp) for p in t["partitions"]}


async def _converge(conn: BrokerConnection, members: dict[str, Any]) -> dict[str, Any]:
    """Heartbeat every member with what it was last given until the group is stable with
    every member at the group epoch (a generous deadline: Apache Kafka delays the first
    assignment by ``group.streams.initial.rebalance.delay.ms``)."""
    last, loop = dict(members), asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        for m, prev in last.items():
            resp = await _beat(conn, m, prev.member_epoch, _active(prev))
            assert resp.error_code == ErrorCode.none, resp
            last[m] = resp if resp.active_tasks is not None else _Epoch(prev, resp)
        described = await conn.call(
            ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[APP], include_authorized_operations=False
        )
        group = described.groups[0]
        epochs = {r.member_epoch for r in last.values()}
        if group.group_state == "Stable" and epochs == {group.group_epoch}:
            return last
        assert loop.time() < deadline, described
        await asyncio.sleep(0.2)


async def _commit(conn: BrokerConnection, epoch: int, task: tuple[str, int]) -> int:
    sub, partition = task
    resp = await conn.call(
        ApiKey.OFFSET_COMMIT,
        min_version=9,
        max_version=9,  # v10 names topics by id
        group_id=APP,
        generation_id_or_member_epoch=epoch,
        member_id="m-a",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            {
                "name": _INPUT[sub],
                "partitions": [
                    {
                        "partition_index": partition,
                        "committed_offset": 3,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    )
    return int(resp.topics[0].partitions[0].error_code)


def test_a_survivor_commits_a_task_it_kept_at_its_previous_epoch(
    any_broker: BrokerEndpoint,
) -> None:
    create_topic(any_broker.bootstrap, "words", partitions=2)

    async def scenario(conn: BrokerConnection) -> None:
        a = await _beat(conn, "m-a", 0)
        b = await _beat(conn, "m-b", 0)
        last = await _converge(conn, {"m-a": a, "m-b": b})
        before = last["m-a"].member_epoch
        kept, gained = _tasks(last["m-a"]), _tasks(last["m-b"])
        assert kept and gained
        left = await _beat(conn, "m-b", -1)
        assert left.error_code == ErrorCode.none
        now = (await _converge(conn, {"m-a": last["m-a"]}))["m-a"]  # a runs every task
        assert _tasks(now) == kept | gained and now.member_epoch > before
        k, g = min(kept), min(gained)
        codes = (await _commit(conn, before, k), await _commit(conn, before, g))
        assert codes == (ErrorCode.none, ErrorCode.stale_member_epoch)
        assert await _commit(conn, now.member_epoch, g) == ErrorCode.none
        assert await _commit(conn, now.member_epoch + 1, k) == ErrorCode.stale_member_epoch
        await _beat(conn, "m-a", -1)

    _run(int(any_broker.bootstrap.rsplit(":", 1)[1]), scenario)


class _Epoch:
    """A heartbeat answer without tasks: the tasks are unchanged, the epoch may be new."""

    def __init__(self, prev: Any, resp: Any) -> None:
        self.active_tasks = prev.active_tasks
        self.member_epoch = resp.member_epoch
