"""KIP-1251 assignment epochs over real sockets: raw ConsumerGroupHeartbeat and OffsetCommit v9
sequences (kio's schemas, streamrt's admin connection) on the embedded broker and on Apache
Kafka 4.3.1 (``any_broker``).

The case of the Kafka Streams CI failure, as a plain consumer group: two members share a topic,
one leaves, the group epoch bumps, and the survivor (which keeps its partitions and gains the
others at the new epoch) commits at the epoch it had before. The embedded broker implements
KIP-1251: the partitions it held then are committed; one it gained at the new epoch (the
leaver's at the older epoch) is refused alone with STALE_MEMBER_EPOCH. Apache Kafka 4.3.1
does not carry KIP-1251's consumer-group part and refuses both (measured; asserted separately,
so the difference stays visible and a later Kafka that adopts it shows up here)."""

from __future__ import annotations

import asyncio
from typing import Any

from streamrt.admin.connection import BrokerConnection
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from tests.apache_kafka.support import BrokerEndpoint
from tests.broker.test_consumer_group_static_scenarios import Member, _converge
from tests.kafka_helpers import create_topic

GROUP = "static-scenarios"  # the name the shared helpers heartbeat to
TOPIC = "foo"


async def _commit(conn: BrokerConnection, member: Member, epoch: int, parts: list[int]) -> Any:
    resp = await conn.call(
        ApiKey.OFFSET_COMMIT,
        min_version=9,
        max_version=9,  # topics by name (v10 names them by id)
        group_id=GROUP,
        generation_id_or_member_epoch=epoch,
        member_id=member.member_id,
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": 7,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                    for p in parts
                ],
            }
        ],
    )
    return {p.partition_index: p.error_code for t in resp.topics for p in t.partitions}


def test_a_survivor_commits_at_its_epoch_from_before_the_others_leave(
    any_broker: BrokerEndpoint,
) -> None:
    create_topic(any_broker.bootstrap, TOPIC, partitions=6)
    port = int(any_broker.bootstrap.rsplit(":", 1)[1])

    async def scenario(conn: BrokerConnection) -> None:
        a, b = Member(None, (TOPIC,)), Member(None, (TOPIC,))
        a.apply(await a.beat(conn))
        b.apply(await b.beat(conn))
        before = await _converge(conn, [a, b], 6)
        kept, gained = sorted(a.partitions()), sorted(b.partitions())
        assert kept and gained
        await b.beat(conn, -1)  # b leaves: the group epoch bumps
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while a.partitions() != set(range(6)):  # a reconciles to every partition
            a.apply(await a.beat(conn))
            assert loop.time() < deadline, (a.epoch, a.owned)
            await asyncio.sleep(0.1)
        assert a.epoch > before
        # the commit a would have sent at its previous epoch, racing the leave
        codes = await _commit(conn, a, before, [kept[0], gained[0]])
        if any_broker.kind == "embedded":  # KIP-1251
            assert codes == {kept[0]: ErrorCode.none, gained[0]: ErrorCode.stale_member_epoch}
        else:  # Apache Kafka 4.3.1: the member epoch must match exactly
            assert codes == dict.fromkeys((kept[0], gained[0]), ErrorCode.stale_member_epoch)
        # at its current epoch both pass on both brokers; above it, neither
        assert set((await _commit(conn, a, a.epoch, [kept[0], gained[0]])).values()) == {0}
        above = await _commit(conn, a, a.epoch + 1, [kept[0]])
        assert above == {kept[0]: ErrorCode.stale_member_epoch}
        await a.beat(conn, -1)

    async def go() -> None:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            await scenario(conn)
        finally:
            await conn.close()

    asyncio.run(go())
