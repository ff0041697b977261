"""A JoinGroup superseded by a newer one of the same member: unanswered, and let go.

Kafka never answers the older request; its client has normally timed out and reconnected. The
broker must not hold that connection until it stops: it closes it at once. Real sockets, our
own protocol client (``BrokerConnection``) so the test controls each request.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from streamrt.admin.connection import AdminConnectionError, BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.errors import ErrorCode
from tests.broker.groups_support import start_broker

JOIN = 11
HEARTBEAT = 12
SYNC = 14


async def _until_rebalancing(leader: BrokerConnection, generation: int, member_id: str) -> None:
    """Wait until the coordinator has the parked JoinGroup: the leader's heartbeat then answers
    REBALANCE_IN_PROGRESS (a fixed sleep was too short on a loaded machine)."""
    for _ in range(200):
        beat = await leader.call(
            HEARTBEAT,
            min_version=3,
            group_id="g",
            generation_id=generation,
            member_id=member_id,
            group_instance_id="i1",
        )
        if beat.error_code == ErrorCode.rebalance_in_progress:
            return
        assert beat.error_code == ErrorCode.none
        await asyncio.sleep(0.1)
    raise AssertionError("the parked JoinGroup never reached the coordinator")


def _join_fields(member_id: str, instance_id: str | None) -> dict[str, object]:
    return {
        "group_id": "g",
        "session_timeout": 10_000,
        "rebalance_timeout": 30_000,
        "member_id": member_id,
        "group_instance_id": instance_id,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    }


def test_superseded_join_closes_its_connection_and_the_newer_one_is_answered(
    tmp_path: Path,
) -> None:
    broker: BrokerThread = start_broker(tmp_path / "broker")
    host, port = broker.bootstrap.rsplit(":", 1)

    async def scenario() -> None:
        leader, old, new = [await BrokerConnection.open(host, int(port)) for _ in range(3)]
        try:
            # a static leader forms a Stable group
            joined = await leader.call(JOIN, min_version=5, **_join_fields("", "i1"))
            assert joined.error_code == ErrorCode.none
            synced = await leader.call(
                SYNC,
                min_version=3,
                group_id="g",
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                group_instance_id="i1",
                protocol_type="consumer",
                protocol_name="range",
                assignments=[{"member_id": joined.member_id, "assignment": b""}],
            )
            assert synced.error_code == ErrorCode.none
            # a dynamic member gets its id, then joins: parked until i1 rejoins
            required = await old.call(JOIN, min_version=5, **_join_fields("", None))
            assert required.error_code == ErrorCode.member_id_required
            member = required.member_id
            parked = asyncio.create_task(
                old.call(JOIN, min_version=5, **_join_fields(member, None))
            )
            await _until_rebalancing(leader, joined.generation_id, joined.member_id)
            assert not parked.done()
            # the same member joins again on another connection: the first is superseded
            newer = asyncio.create_task(new.call(JOIN, min_version=5, **_join_fields(member, None)))
            try:
                await asyncio.wait_for(parked, 5)
                raise AssertionError("the superseded JoinGroup was answered")
            except AdminConnectionError:
                pass  # the broker closed that connection instead of holding it
            assert not newer.done()
            # the leader rejoins: the rebalance completes and the newer request is answered
            rejoined = await leader.call(
                JOIN, min_version=5, **_join_fields(joined.member_id, "i1")
            )
            answered = await asyncio.wait_for(newer, 10)
            assert answered.error_code == rejoined.error_code == ErrorCode.none
            assert answered.generation_id == rejoined.generation_id == joined.generation_id + 1
        finally:
            for conn in (leader, old, new):
                await conn.close()

    try:
        asyncio.run(scenario())
    finally:
        broker.stop()
