"""One stream thread of a count app with its Kafka clients faked, for broker-less tests.

A real (unstarted) StreamThread, its real TaskManager, RebalanceListener and committer, real
tasks with RocksDB stores on disk; only the Kafka clients are fakes: the group consumer
(pause/resume/seek/commit), the restore consumer (changelogs held in memory) and the producer.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.errors import KafkaConnectionError, ProducerFenced
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.runtime import App, ThreadState
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.assignor import AssignmentInfo
from streamrt.runtime.engine.collector import ProducerCollector
from streamrt.runtime.engine.committers import AtLeastOnceCommitter, Committer, ExactlyOnceCommitter
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.eos import TransactionalCollector
from streamrt.runtime.engine.rebalance_listener import RebalanceListener
from streamrt.runtime.engine.restore_consumer import AiokafkaRestoreConsumer
from streamrt.runtime.engine.task_factory import TaskFactory
from streamrt.runtime.engine.task_manager import TaskEvents, TaskManager
from streamrt.runtime.engine.thread import StreamThread
from streamrt.runtime.stores import RecordCache

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
        self.committed_offsets: dict[KafkaTP, int] = {}
        self.seeks: list[tuple[KafkaTP, int | None]] = []

    def assignment(self) -> set[KafkaTP]:
        return set(self.assigned)

    def pause(self, *partitions: KafkaTP) -> None:
        self.paused.update(partitions)

    def resume(self, *partitions: KafkaTP) -> None:
        self.paused.difference_update(partitions)

    def seek(self, tp: KafkaTP, offset: int | None) -> None:
        self.seeks.append((tp, offset))

    async def seek_to_beginning(self, *tps: KafkaTP) -> None:
        self.seeks.extend((tp, None) for tp in tps)

    async def commit(self, offsets: Mapping[KafkaTP, int]) -> None:
        self.commits.append(dict(offsets))
        self.committed_offsets.update(offsets)

    async def committed(self, tp: KafkaTP) -> int | None:
        return self.committed_offsets.get(tp)


@dataclass
class Record:
    offset: int
    key: bytes
    value: bytes | None
    timestamp: int = -1  # aiokafka's ConsumerRecord has one; restoration keeps it for rows


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


class FakeTxnProducer(FakeProducer):
    """A transactional producer: sends wait in the open transaction; its commit appends them
    to the logs (what a read_committed reader sees), an abort drops them. A ``fenced``
    producer fails to commit or abort, as a producer whose epoch a newer one bumped."""

    def __init__(self, logs: dict[KafkaTP, list[tuple[bytes, bytes | None]]]) -> None:
        super().__init__(logs)
        self.pending: list[tuple[KafkaTP, tuple[bytes, bytes | None]]] = []
        self.offsets_sent: list[dict[KafkaTP, int]] = []
        self.fenced = False
        self.fail_commit = False  # the next commit fails (a broker gone), the abort works
        self.aborts = 0
        self.started = self.stopped = False

    async def send(self, topic: str, value: Any, key: Any, partition: Any, **_: Any) -> Any:
        tp = KafkaTP(topic, partition)
        self.pending.append((tp, (key, value)))
        offset = len(self.logs.get(tp, [])) + sum(1 for p, _ in self.pending if p == tp) - 1
        fut: asyncio.Future[Delivered] = asyncio.get_running_loop().create_future()
        fut.set_result(Delivered(topic, partition, offset))
        return fut

    async def begin_transaction(self) -> None:
        pass

    async def send_offsets_to_transaction(self, offsets: Any, group_id: str) -> None:
        self.offsets_sent.append(dict(offsets))

    async def commit_transaction(self) -> None:
        if self.fenced:
            raise ProducerFenced()
        if self.fail_commit:
            self.fail_commit = False
            raise KafkaConnectionError("broker gone")
        for tp, record in self.pending:
            self.logs.setdefault(tp, []).append(record)
        self.pending.clear()

    async def abort_transaction(self) -> None:
        if self.fenced:
            raise ProducerFenced()
        self.aborts += 1
        self.pending.clear()

    async def start(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.stopped = True


# -- one stream thread of a word-count app, its clients faked -------------------------------


@dataclass
class Rig:
    thread: StreamThread
    tasks: TaskManager
    listener: RebalanceListener
    committer: Committer
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


def rig(
    state_dir: Path,
    index: int,
    logs: dict[KafkaTP, list[Any]],
    producers: list[FakeTxnProducer] | None = None,
) -> Rig:
    """The thread's rig; with ``producers`` it is exactly_once_v2, and every transactional
    producer the thread makes is appended there."""
    app = App({"application.id": APP})
    app.stream("in", key_serde="str", value_serde="str").group_by_key().count(store="counts")
    settings = {"application.id": APP, "state.dir": str(state_dir)}
    if producers is not None:
        settings["processing.guarantee"] = "exactly_once_v2"
    config = StreamsConfig.from_mapping(settings)
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
    committer = committer_for(config, thread, consumer, logs, producers)
    tasks = TaskManager.build(
        TaskFactory(env, committer.collector, RecordCache(0)),
        consumer,
        AiokafkaRestoreConsumer(FakeRestoreConsumer(logs)),  # type: ignore[arg-type]
        TaskEvents(thread.emit, thread.mark, thread.tasks_running),
        thread.name,
    )
    listener = RebalanceListener(thread, tasks, committer)
    return Rig(thread, tasks, listener, committer, consumer, events)


def committer_for(
    config: StreamsConfig,
    thread: StreamThread,
    consumer: FakeGroupConsumer,
    logs: dict[KafkaTP, list[Any]],
    producers: list[FakeTxnProducer] | None,
) -> Committer:
    if producers is None:
        collector = ProducerCollector(FakeProducer(logs))  # type: ignore[arg-type]
        return AtLeastOnceCommitter(collector, consumer, None, thread.emit)  # type: ignore[arg-type]

    def new_producer() -> FakeTxnProducer:
        producers.append(FakeTxnProducer(logs))
        return producers[-1]

    return ExactlyOnceCommitter(
        TransactionalCollector(new_producer()),  # type: ignore[arg-type]
        consumer,  # type: ignore[arg-type]
        None,
        thread.emit,
        config.application_id,
        new_producer,  # type: ignore[arg-type]
        thread.name,
    )


async def until_running(r: Rig, steps: int = 20) -> None:
    for _ in range(steps):
        if r.tasks.all_running:
            return
        await r.tasks.step()
    raise AssertionError(f"not running: restoring {r.tasks.restoring}, locked {r.tasks.locked}")
