"""The service's side of an upgrade, on the real LogManager: an upgrade whose records cannot be
written is undone (the classic group is back, its member keeps heartbeating), a written one
survives a restart with its classic member (Kafka's ``ClassicMemberMetadata``), which keeps
heartbeating at its generation and committing offsets.

The one thing faked is the disk's answer (``test_persistence_service._SwitchableDisk``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from streamrt.broker.config import BrokerConfig
from streamrt.broker.consumer_group.requests import HeartbeatRequest
from streamrt.broker.coordination.log_writer import CoordinatorLogs
from streamrt.broker.group.service import GroupCoordinatorService
from streamrt.broker.log.log_manager import LogManager
from streamrt.errors import ErrorCode
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext
from tests.broker.consumer_group.mixed import assignment, subscription
from tests.broker.consumer_group.test_persistence_service import _SwitchableDisk

CONFIG = BrokerConfig(
    {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
)


async def _call(svc: GroupCoordinatorService, api_key: int, version: int, **fields: Any) -> Any:
    request = build(codec_for(api_key, version).request_cls, **fields)
    return await svc.handle(RequestContext(api_key, version, 1, "c", "/127.0.0.1"), request)


async def _classic_member(svc: GroupCoordinatorService) -> tuple[str, int]:
    """One classic member owning all 4 partitions of ``t``: (member id, generation)."""
    fields = {
        "group_id": "g",
        "session_timeout": 30_000,
        "rebalance_timeout": 30_000,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription()}],
        "reason": None,
    }
    first = await _call(svc, 11, 9, member_id="", **fields)
    joined = await _call(svc, 11, 9, member_id=first.member_id, **fields)
    assert joined.error_code == ErrorCode.none
    synced = await _call(
        svc,
        14,
        5,
        group_id="g",
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[{"member_id": joined.member_id, "assignment": assignment(range(4))}],
    )
    assert synced.error_code == ErrorCode.none
    return joined.member_id, joined.generation_id


async def _heartbeat(svc: GroupCoordinatorService, member_id: str, generation: int) -> ErrorCode:
    answer = await _call(
        svc, 12, 4, group_id="g", generation_id=generation, member_id=member_id,
        group_instance_id=None,
    )  # fmt: skip
    return ErrorCode(answer.error_code)


def _join(member_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(
        "g", member_id, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), owned={}
    )


def test_an_upgrade_is_undone_if_not_written_and_reloaded_with_its_classic_member(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        logs = LogManager(tmp_path, CONFIG)
        logs.load()
        logs.create_topic("t", 4)
        disk = _SwitchableDisk(logs)
        typed: CoordinatorLogs = disk
        svc = GroupCoordinatorService(typed, CONFIG)
        await svc.start()
        member, generation = await _classic_member(svc)
        disk.failing = True
        failed = await svc.consumer_heartbeat(_join("new"))
        assert failed.error != ErrorCode.none
        assert "g" in svc.coordinator.groups and "g" not in svc.consumer.groups  # undone
        assert await _heartbeat(svc, member, generation) is ErrorCode.none
        disk.failing = False
        new = await svc.consumer_heartbeat(_join("new"))
        assert new.error == ErrorCode.none and "g" not in svc.coordinator.groups
        assert await _heartbeat(svc, member, generation) is ErrorCode.rebalance_in_progress
        await svc.stop()

        again = GroupCoordinatorService(typed, CONFIG)  # a restart from the same log
        await again.start()
        group = again.consumer.groups["g"]
        assert set(group.members) == {member, "new"} and "g" not in again.coordinator.groups
        classic = group.members[member]
        assert classic.classic is not None and classic.classic.session_timeout_ms == 30_000
        assert classic.assigned == svc.consumer.groups["g"].members[member].assigned
        # still a classic member of it: told to rejoin (the new member waits for partitions)
        assert await _heartbeat(again, member, generation) is ErrorCode.rebalance_in_progress
        await again.stop()
        logs.close()

    asyncio.run(scenario())
