"""The service's side of removing consumer-group members by LeaveGroup, on the real
LogManager: the reply comes once the records are in ``__consumer_offsets`` (a restart from the
same directory has the member gone), and a removal whose records cannot be written is undone
and fails the request whole, so no "removed" is read for a removal that is not durable.

The one thing faked is the disk's answer (``_SwitchableDisk``: appends raise ``OSError``)."""

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
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext
from tests.broker.consumer_group.test_persistence_service import CONFIG, _SwitchableDisk


def _join(member_id: str, instance_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        instance_id=instance_id,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=("t",),
        owned={},
    )


def _leave(svc: GroupCoordinatorService, instance_id: str) -> Any:
    ctx = RequestContext(ApiKey.LEAVE_GROUP, 5, 7, "admin", "/127.0.0.1")
    request = build(
        codec_for(ApiKey.LEAVE_GROUP, 5).request_cls,
        group_id="g",
        members=[{"member_id": "", "group_instance_id": instance_id, "reason": None}],
    )
    return svc.handle(ctx, request)


def test_a_removal_is_written_before_its_answer_and_undone_if_it_cannot_be(
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
        for member, instance in (("a", "A"), ("b", "B")):
            assert (await svc.consumer_heartbeat(_join(member, instance))).error == ErrorCode.none
        disk.failing = True
        failed = await _leave(svc, "A")
        assert failed.error_code != ErrorCode.none and not failed.members
        group = svc.consumer.groups["g"]
        assert (set(group.members), group.group_epoch) == ({"a", "b"}, 2)  # undone
        disk.failing = False
        done = await _leave(svc, "A")
        assert done.error_code == ErrorCode.none
        assert [(m.group_instance_id, m.error_code) for m in done.members] == [("A", 0)]
        assert (set(group.members), group.group_epoch) == ({"b"}, 3)
        await svc.stop()

        again = GroupCoordinatorService(typed, CONFIG)  # a restart from the same log
        await again.start()
        loaded = again.consumer.groups["g"]
        assert (set(loaded.members), loaded.group_epoch, loaded.static_members) == (
            {"b"},
            3,
            {"B": "b"},
        )
        await again.stop()
        logs.close()

    asyncio.run(scenario())


def test_members_of_an_undone_removal_still_expire(tmp_path: Path) -> None:
    """The removal's undo gives the members back their session timers (the removal had
    cancelled them): a member that stops heartbeating after a failed LeaveGroup still goes at
    the end of its session, on the service's real timer."""
    config = BrokerConfig(
        {"offsets.topic.num.partitions": "3", "group.consumer.session.timeout.ms": "300"}
    )

    async def scenario() -> None:
        logs = LogManager(tmp_path, config)
        logs.load()
        logs.create_topic("t", 4)
        disk = _SwitchableDisk(logs)
        typed: CoordinatorLogs = disk
        svc = GroupCoordinatorService(typed, config)
        await svc.start()
        assert (await svc.consumer_heartbeat(_join("a", "A"))).error == ErrorCode.none
        disk.failing = True
        failed = await _leave(svc, "A")
        assert failed.error_code != ErrorCode.none
        assert set(svc.consumer.groups["g"].members) == {"a"}  # undone
        disk.failing = False
        for _ in range(400):  # up to 20 s on a loaded machine; the session is 0.3 s
            if not svc.consumer.groups["g"].members:
                break
            await asyncio.sleep(0.05)
        assert not svc.consumer.groups["g"].members  # expired with its session
        await svc.stop()
        logs.close()

    asyncio.run(scenario())
