"""How the coordinator service runs a step: appends off the event loop with fsync=always, and
nothing of a step that raised leaks into the next one."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from streamrt.broker.config import BrokerConfig
from streamrt.broker.coordination.log_writer import CoordinatorLogs, PartitionWriter, TopicView
from streamrt.broker.group.rebalance import RebalanceEngine
from streamrt.broker.group.service import CONSUMER_OFFSETS, GroupCoordinatorService
from streamrt.broker.log.log_manager import LogManager
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext

CONFIG = BrokerConfig(
    {
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "10",
    }
)


def _req(api_key: ApiKey, version: int, **fields: Any) -> tuple[RequestContext, Any]:
    ctx = RequestContext(api_key, version, 7, "steps-client", "/127.0.0.1")
    return ctx, build(codec_for(api_key, version).request_cls, **fields)


async def _join_and_sync(svc: GroupCoordinatorService, instance: str) -> str:
    joined = await svc.handle(
        *_req(
            ApiKey.JOIN_GROUP,
            5,
            group_id="g",
            session_timeout=30_000,
            rebalance_timeout=30_000,
            member_id="",
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=[{"name": "range", "metadata": b"meta"}],
        )
    )
    assert joined.error_code == ErrorCode.none
    synced = await svc.handle(
        *_req(
            ApiKey.SYNC_GROUP,
            3,
            group_id="g",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=instance,
            assignments=[{"member_id": joined.member_id, "assignment": b"a"}],
        )
    )
    assert synced.error_code == ErrorCode.none
    return str(joined.member_id)


def _offsets_log_end(logs: LogManager) -> int:
    n = logs.topics()[CONSUMER_OFFSETS].num_partitions
    return sum(logs.log(CONSUMER_OFFSETS, p).log_end_offset for p in range(n))


def test_a_step_that_raises_leaves_nothing_for_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed LeaveGroup had collected a group record; it must not be written later."""

    async def scenario() -> None:
        logs = LogManager(tmp_path, CONFIG)
        logs.load()
        svc = GroupCoordinatorService(logs, CONFIG)
        await svc.start()
        member = await _join_and_sync(svc, "i1")

        original = RebalanceEngine.complete_join

        def complete_then_fail(self: RebalanceEngine, group: Any) -> None:
            original(self, group)  # the group is now Empty: its record is in the outbox
            raise RuntimeError("bug after the outbox was filled")

        monkeypatch.setattr(RebalanceEngine, "complete_join", complete_then_fail)
        before = _offsets_log_end(logs)
        with pytest.raises(RuntimeError):
            await svc.handle(
                *_req(
                    ApiKey.LEAVE_GROUP,
                    3,
                    group_id="g",
                    members=[{"member_id": member, "group_instance_id": "i1"}],
                )
            )
        monkeypatch.setattr(RebalanceEngine, "complete_join", original)
        listed = await svc.handle(*_req(ApiKey.LIST_GROUPS, 4, states_filter=[]))
        assert listed.error_code == ErrorCode.none
        assert _offsets_log_end(logs) == before, "a record of the failed step was written"
        await svc.stop()
        logs.close()

    asyncio.run(scenario())


class _ThreadRecordingLogs:
    """A :class:`CoordinatorLogs` over the real LogManager that notes which thread appends."""

    def __init__(self, logs: LogManager) -> None:
        self._logs = logs
        self.append_threads: list[int] = []

    def topics(self) -> Mapping[str, TopicView]:
        return self._logs.topics()

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        internal: bool = False,
    ) -> object:
        return self._logs.create_topic(name, num_partitions, configs, internal=internal)

    def log(self, topic: str, partition: int) -> PartitionWriter:
        return _RecordingPartition(self._logs.log(topic, partition), self.append_threads)


class _RecordingPartition:
    def __init__(self, log: Any, threads: list[int]) -> None:
        self._log = log
        self._threads = threads

    @property
    def log_start_offset(self) -> int:
        return int(self._log.log_start_offset)

    @property
    def log_end_offset(self) -> int:
        return int(self._log.log_end_offset)

    def read(self, offset: int, max_bytes: int) -> Any:
        return self._log.read(offset, max_bytes)

    def append(self, records: bytes, now_ms: int, *, coordinator: bool = False) -> object:
        self._threads.append(threading.get_ident())
        return self._log.append(records, now_ms, coordinator=coordinator)

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, now: int
    ) -> int:
        return self._log.append_marker(producer_id, producer_epoch, commit, coordinator_epoch, now)


@pytest.mark.parametrize(("fsync", "off_loop"), [("always", True), ("interval", False)])
def test_group_records_are_appended_off_the_event_loop_when_every_append_fsyncs(
    tmp_path: Path, fsync: str, off_loop: bool
) -> None:
    config = CONFIG.with_overrides({"streamrt.log.fsync": fsync})

    async def scenario() -> None:
        logs = LogManager(tmp_path, config)
        logs.load()
        recording = _ThreadRecordingLogs(logs)
        typed: CoordinatorLogs = recording
        svc = GroupCoordinatorService(typed, config)
        await svc.start()
        await _join_and_sync(svc, "i1")
        await svc.stop()
        logs.close()
        loop_thread = threading.get_ident()
        assert recording.append_threads, "JoinGroup/SyncGroup wrote no group record"
        assert all((t != loop_thread) is off_loop for t in recording.append_threads)

    asyncio.run(scenario())
