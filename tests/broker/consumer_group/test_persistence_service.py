"""The service's side of KIP-848 persistence, on the real LogManager: a heartbeat's records
are in ``__consumer_offsets`` before its answer, a restart from the same directory reloads the
group, and a heartbeat whose records cannot be written is answered with an error and undone.

The one thing faked is the disk's answer: appends to ``__consumer_offsets`` raise ``OSError``
while a switch is on."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamrt.broker.config import BrokerConfig
from streamrt.broker.consumer_group.requests import HeartbeatRequest
from streamrt.broker.coordination.log_writer import CoordinatorLogs, PartitionWriter, TopicView
from streamrt.broker.group.service import GroupCoordinatorService
from streamrt.broker.log.log_manager import LogManager
from streamrt.errors import ErrorCode

CONFIG = BrokerConfig({"offsets.topic.num.partitions": "3"})


class _SwitchableDisk:
    """A :class:`CoordinatorLogs` over the real LogManager whose appends fail while ``failing``."""

    def __init__(self, logs: LogManager) -> None:
        self._logs = logs
        self.failing = False

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
        return _Partition(self._logs.log(topic, partition), self)


class _Partition:
    def __init__(self, log: Any, disk: _SwitchableDisk) -> None:
        self._log = log
        self._disk = disk

    @property
    def log_start_offset(self) -> int:
        return int(self._log.log_start_offset)

    @property
    def log_end_offset(self) -> int:
        return int(self._log.log_end_offset)

    def read(self, offset: int, max_bytes: int) -> Any:
        return self._log.read(offset, max_bytes)

    def append(self, records: bytes, now_ms: int, *, coordinator: bool = False) -> object:
        if self._disk.failing:
            raise OSError(5, "Input/output error")
        return self._log.append(records, now_ms, coordinator=coordinator)

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, now: int
    ) -> int:
        return self._log.append_marker(producer_id, producer_epoch, commit, coordinator_epoch, now)


def _join(member_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=("t",),
        owned={},
    )


def test_a_heartbeat_that_cannot_be_written_is_undone_and_a_written_one_reloads(
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
        a = await svc.consumer_heartbeat(_join("a"))
        assert (a.error, a.member_epoch) == (ErrorCode.none, 1)
        disk.failing = True
        failed = await svc.consumer_heartbeat(_join("b"))
        assert failed.error != ErrorCode.none and failed.member_id is None
        group = svc.consumer.groups["g"]
        assert (set(group.members), group.group_epoch) == ({"a"}, 1)  # b's join undone
        disk.failing = False
        b = await svc.consumer_heartbeat(_join("b"))
        assert (b.error, b.member_epoch) == (ErrorCode.none, 2)
        await svc.stop()

        again = GroupCoordinatorService(typed, CONFIG)  # a restart from the same log
        await again.start()
        loaded = again.consumer.groups["g"]
        assert (set(loaded.members), loaded.group_epoch) == ({"a", "b"}, 2)
        assert loaded.members["a"].assigned == group.members["a"].assigned
        beat = await again.consumer_heartbeat(
            HeartbeatRequest(group_id="g", member_id="a", member_epoch=1)
        )
        assert beat.error == ErrorCode.none  # its epoch is known: no fencing, no rejoin
        await again.stop()
        logs.close()

    asyncio.run(scenario())
