"""The task lifecycle of a stream thread, driven without a broker.

A real (unstarted) StreamThread, its real TaskManager, RebalanceListener and committer, real
tasks with RocksDB stores on disk; only the Kafka clients are fakes: the group consumer
(pause/resume/commit), the restore consumer (changelogs held in memory) and the producer.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.runtime import App, ThreadState
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.assignor import AssignmentInfo
from streamrt.runtime.engine.collector import ProducerCollector
from streamrt.runtime.engine.committers import AtLeastOnceCommitter
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.rebalance_listener import RebalanceListener
from streamrt.runtime.engine.task_factory import TaskFactory
from streamrt.runtime.engine.task_manager import TaskEvents, TaskManager
from streamrt.runtime.engine.thread import StreamThread
from streamrt.runtime.stores import RecordCache
from streamrt.state import read_checkpoint_hint

APP = "tm"
INPUT = KafkaTP("in", 0)
CHANGELOG = KafkaTP(f"{APP}-counts-changelog", 0)


def count(n: int) -> bytes:
    return struct.pack(">q", n)


# -- the fakes: the Kafka clients only ------------------------------------------------------


class FakeGroupConsumer:
    """The group consumer as the TaskManager and the committer use it."""

    def __init__(self, assigned: Iterable[KafkaTP]) -> None:
        self.assigned = set(assigned)
        self.paused: set[KafkaTP] = set()
        self.commits: list[dict[KafkaTP, int]] = []

    def assignment(self) -> set[KafkaTP]:
        return set(self.assigned)

    def pause(self, *partitions: KafkaTP) -> None:
        self.paused.update(partitions)

    def resume(self, *partitions: KafkaTP) -> None:
        self.paused.difference_update(partitions)

    async def commit(self, offsets: Mapping[KafkaTP, int]) -> None:
        self.commits.append(dict(offsets))


@dataclass
class Record:
    offset: int
    key: bytes
    value: bytes | None


class FakeRestoreConsumer:
    """Changelogs in memory; assign, seek, fetch and positions as aiokafka's consumer."""

    def __init__(self, logs: dict[KafkaTP, list[tuple[bytes, bytes | None]]]) -> None:
        self.logs = logs
        self.positions: dict[KafkaTP, int | None] = {}

    async def end_offsets(self, tps: list[KafkaTP]) -> dict[KafkaTP, int]:
        return {tp: len(self.logs.get(tp, [])) for tp in tps}

    def assign(self, tps: list[KafkaTP]) -> None:
        self.positions = dict.fromkeys(tps)

    def assignment(self) -> set[KafkaTP]:
        return set(self.positions)

    def seek(self, tp: KafkaTP, offset: int) -> None:
        self.positions[tp] = offset

    async def seek_to_beginning(self, *tps: KafkaTP) -> None:
        for tp in tps:
            self.positions[tp] = 0

    async def position(self, tp: KafkaTP) -> int:
        return self.positions[tp] or 0

    def highwater(self, tp: KafkaTP) -> int:
        return len(self.logs.get(tp, []))

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> Any:
        out = {}
        for tp, position in self.positions.items():
            start = position or 0
            batch = self.logs.get(tp, [])[start : start + 2]  # small batches: several steps
            if batch:
                out[tp] = [Record(start + i, k, v) for i, (k, v) in enumerate(batch)]
                self.positions[tp] = start + len(batch)
        return out


@dataclass
class Delivered:
    topic: str
    partition: int
    offset: int


class FakeProducer:
    """Appends every send to an in-memory log per partition; flush delivers at once."""

    def __init__(self, logs: dict[KafkaTP, list[tuple[bytes, bytes | None]]]) -> None:
        self.logs = logs

    async def send(self, topic: str, value: Any, key: Any, partition: Any, **_: Any) -> Any:
        log = self.logs.setdefault(KafkaTP(topic, partition), [])
        log.append((key, value))
        fut: asyncio.Future[Delivered] = asyncio.get_running_loop().create_future()
        fut.set_result(Delivered(topic, partition, len(log) - 1))
        return fut

    async def flush(self) -> None:
        return None


# -- one stream thread of a word-count app, its clients faked -------------------------------


@dataclass
class Rig:
    thread: StreamThread
    tasks: TaskManager
    listener: RebalanceListener
    committer: AtLeastOnceCommitter
    consumer: FakeGroupConsumer
    events: list[tuple[str, dict[str, Any]]]

    def assign(self, active: Iterable[str] = (), standby: Iterable[str] = ()) -> None:
        """What the leader's assignment tells this thread (through the real assignor)."""
        info = AssignmentInfo(tuple(active), (), {}, tuple(standby))
        self.thread.member.assignor().on_assignment(
            ConsumerProtocolMemberAssignment(0, [], info.encode())
        )

    def types(self) -> list[str]:
        return [t for t, _ in self.events]


def rig(state_dir: Path, index: int, logs: dict[KafkaTP, list[Any]]) -> Rig:
    app = App({"application.id": APP})
    app.stream("in", key_serde="str", value_serde="str").group_by_key().count("counts")
    config = StreamsConfig.from_mapping({"application.id": APP, "state.dir": str(state_dir)})
    events: list[tuple[str, dict[str, Any]]] = []
    env = ThreadEnv(
        config,
        app.topology,
        tuple(app.topology.subtopologies(APP)),
        "web-1",
        True,
        lambda type_, _index, **kv: events.append((type_, kv)),
    )
    thread = StreamThread(env, index)
    thread.transition(ThreadState.STARTING)  # as start() does, without an OS thread
    consumer = FakeGroupConsumer([INPUT])
    committer = AtLeastOnceCommitter(
        ProducerCollector(FakeProducer(logs)),  # type: ignore[arg-type]
        consumer,  # type: ignore[arg-type]
        None,
        thread.emit,
    )
    tasks = TaskManager.build(
        TaskFactory(env, committer.collector, RecordCache(0)),
        consumer,
        FakeRestoreConsumer(logs),  # type: ignore[arg-type]
        TaskEvents(thread.emit, thread.mark, thread.tasks_running),
        thread.name,
    )
    listener = RebalanceListener(thread, tasks, committer)
    return Rig(thread, tasks, listener, committer, consumer, events)


async def until_running(r: Rig, steps: int = 20) -> None:
    for _ in range(steps):
        if r.tasks.all_running:
            return
        await r.tasks.step()
    raise AssertionError(f"not running: restoring {r.tasks.restoring}, locked {r.tasks.locked}")


# -- the tests -------------------------------------------------------------------------------


def test_an_assignment_creates_the_task_and_restores_it_before_its_input_resumes(
    tmp_path: Path,
) -> None:
    logs: dict[KafkaTP, list[Any]] = {
        CHANGELOG: [(b"a", count(1)), (b"b", count(1)), (b"a", count(2)), (b"a", count(3))]
    }
    r = rig(tmp_path, 1, logs)

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        assert set(r.tasks.tasks) == {"0_0"} and r.tasks.restoring == {"0_0"}
        assert INPUT in r.consumer.paused and r.tasks.task_for(INPUT) is None
        assert r.thread.state is ThreadState.PARTITIONS_ASSIGNED
        await until_running(r)
        assert INPUT not in r.consumer.paused
        assert r.thread.state is ThreadState.RUNNING
        task = r.tasks.task_for(INPUT)
        assert task is not None
        task.process("in", 7, 1000, b"a", b"x")  # the restored count goes on from 3
        await r.committer.collector.drain()
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert logs[CHANGELOG][-1] == (b"a", count(4))
    meta = r.tasks.metadata()
    assert meta["records_restored"] == 4 and meta["active_tasks"] == ()
    assert r.types().index("restore_started") < r.types().index("restore_ready")
    assert ("restore_complete", {"task": "0_0", "records": 4}) in [
        (t, {k: kv[k] for k in ("task", "records")}) for t, kv in r.events if "records" in kv
    ]


def test_an_empty_changelog_means_the_task_runs_at_once(tmp_path: Path) -> None:
    r = rig(tmp_path, 1, {})

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        assert r.tasks.all_running and r.thread.state is ThreadState.RUNNING
        assert INPUT not in r.consumer.paused
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert "restore_started" not in r.types()
    assert r.tasks.metadata()["records_restored"] == 0


def test_a_revocation_commits_what_was_processed_then_closes_the_task(tmp_path: Path) -> None:
    logs: dict[KafkaTP, list[Any]] = {}
    r = rig(tmp_path, 1, logs)

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        task = r.tasks.task_for(INPUT)
        assert task is not None
        task.process("in", 41, 1000, b"k", b"v")
        task.process("in", 42, 1001, b"k", b"v")
        await r.listener.on_partitions_revoked([INPUT])

    asyncio.run(scenario())
    assert r.consumer.commits == [{INPUT: 43}]  # committed after the stores were flushed
    assert logs[CHANGELOG] == [(b"k", count(1)), (b"k", count(2))]
    assert r.tasks.tasks == {} and r.thread.rebalances == 1
    # closed: the directory is free and its checkpoint names the changelog offset reached
    assert read_checkpoint_hint(tmp_path / APP / "0_0") == {"counts": 2}
    assert r.types().index("commit") < r.types().index("revocation") + 2
    assert r.tasks.metadata()["records_processed"] == 2


def test_a_standby_follows_its_changelog_and_the_active_it_becomes_restores_nothing(
    tmp_path: Path,
) -> None:
    logs: dict[KafkaTP, list[Any]] = {CHANGELOG: [(b"a", count(1)), (b"a", count(2))]}
    r = rig(tmp_path, 1, logs)

    async def scenario() -> None:
        r.assign([], ["0_0"])
        await r.listener.on_partitions_assigned([])
        assert r.tasks.tasks == {} and r.tasks.standbys.task_ids == ("0_0",)
        for _ in range(3):
            await r.tasks.step()
        assert r.tasks.standbys.lags() == {"0_0": 0}
        r.assign(["0_0"], [])  # promoted: the standby closes, the active opens its directory
        await r.listener.on_partitions_assigned([INPUT])
        assert r.tasks.standbys.task_ids == () and r.tasks.all_running
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert [t for t in r.types() if t.startswith("standby_")] == [
        "standby_created",
        "standby_opened",
        "standby_closed",
    ]
    meta = r.tasks.metadata()
    assert meta["standby_records_applied"] == 2 and meta["records_restored"] == 0


def test_a_task_whose_directory_is_locked_opens_once_the_owner_closes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs: dict[KafkaTP, list[Any]] = {}
    owner, successor = rig(tmp_path, 1, logs), rig(tmp_path, 2, logs)

    async def scenario() -> None:
        owner.assign(["0_0"])
        await owner.listener.on_partitions_assigned([INPUT])
        successor.assign(["0_0"])
        await successor.listener.on_partitions_assigned([INPUT])
        assert successor.tasks.locked == {"0_0"} and successor.tasks.open_tasks() == []
        assert successor.thread.state is ThreadState.PARTITIONS_ASSIGNED
        await successor.tasks.step()  # still locked: retried, warned once
        assert successor.tasks.locked == {"0_0"} and INPUT in successor.consumer.paused
        await owner.listener.on_partitions_revoked([INPUT])
        await successor.tasks.step()
        assert successor.tasks.locked == set() and INPUT not in successor.consumer.paused
        assert successor.thread.state is ThreadState.RUNNING
        await successor.tasks.close_all()

    with caplog.at_level(logging.WARNING, logger="streamrt.runtime.engine.task_manager"):
        asyncio.run(scenario())
    warnings = [r for r in caplog.records if r.getMessage() == "task state is locked, will retry"]
    assert len(warnings) == 1


def test_an_assignment_without_a_task_closes_it(tmp_path: Path) -> None:
    """A rebalance that revoked nothing from this thread (its partitions were not revoked,
    the leader moved the task anyway) still closes the task and frees its directory."""
    logs: dict[KafkaTP, list[Any]] = {}
    first, second = rig(tmp_path, 1, logs), rig(tmp_path, 2, logs)

    async def scenario() -> None:
        first.assign(["0_0"])
        await first.listener.on_partitions_assigned([INPUT])
        first.assign([])
        await first.listener.on_partitions_assigned([])
        assert first.tasks.tasks == {} and first.thread.state is ThreadState.RUNNING
        second.assign(["0_0"])
        await second.listener.on_partitions_assigned([INPUT])
        assert second.tasks.all_running
        await second.tasks.close_all()

    asyncio.run(scenario())
