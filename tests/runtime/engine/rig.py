"""One stream thread of a count app with its Kafka clients faked, for broker-less tests.

A real (unstarted) StreamThread, its real TaskManager, MemberListener and committer over the
real librdkafka collectors (transactional under exactly_once_v2), real tasks with RocksDB
stores on disk: the default path. Only the Kafka clients are fakes: confluent-kafka's
``Producer`` under the real :class:`LibrdkafkaProducer`, the main consumer (assign, pause,
seek), the restore consumer (changelogs held in memory) and streamrt's group member (its
assignment and offsets).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from confluent_kafka import KafkaError, KafkaException

from streamrt.runtime import App, ThreadState
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.assignment.assignor import AssignmentInfo
from streamrt.runtime.engine.assignment.member_assignor import MemberStreamsAssignor
from streamrt.runtime.engine.clients.rdkafka_producer import LibrdkafkaCollector, LibrdkafkaProducer
from streamrt.runtime.engine.clients.rdkafka_txn import (
    GroupMetadata,
    LibrdkafkaTransactionalCollector,
    TransactionalLibrdkafkaProducer,
)
from streamrt.runtime.engine.commit.committers import (
    AtLeastOnceCommitter,
    Committer,
    ExactlyOnceCommitter,
)
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.rebalance.member_listener import MemberListener
from streamrt.runtime.engine.restore_consumer import ChangelogBatch
from streamrt.runtime.engine.tasks.task import TaskId
from streamrt.runtime.engine.tasks.task_factory import TaskFactory
from streamrt.runtime.engine.tasks.task_manager import TaskEvents, TaskManager
from streamrt.runtime.engine.thread.thread import StreamThread
from streamrt.runtime.stores import RecordCache
from streamrt.topic_partition import TopicPartition

APP = "tm"
INPUT = TopicPartition("in", 0)
CHANGELOG = TopicPartition(f"{APP}-counts-changelog", 0)
Logs = dict[TopicPartition, list[Any]]


def count(n: int) -> bytes:
    return struct.pack(">q", n)


# -- the fakes: the Kafka clients only ------------------------------------------------------


class FakeMainConsumer:
    """The main consumer as the MemberListener, the TaskManager and the committer use it."""

    def __init__(self) -> None:
        self.assigned: set[TopicPartition] = set()
        self._paused: set[TopicPartition] = set()
        self.positions: dict[TopicPartition, int] = {}
        self.seeks: list[tuple[TopicPartition, int | None]] = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = set(partitions)

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def pause(self, *partitions: TopicPartition) -> None:
        self._paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._paused.difference_update(partitions)

    def paused(self) -> set[TopicPartition]:
        return set(self._paused)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp, offset))
        self.positions[tp] = offset

    async def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self.seeks.extend((tp, None) for tp in tps)

    async def position(self, tp: TopicPartition) -> int:
        if tp not in self.positions:
            raise LookupError(tp)  # as librdkafka's before the first fetch
        return self.positions[tp]

    def highwater(self, tp: TopicPartition) -> int | None:
        return None

    def last_stable_offset(self, tp: TopicPartition) -> int | None:
        return None


@dataclass
class FakeMembership:
    """streamrt's group member as the listener and the committers use it: the partitions the
    last assignment gave, the offsets it commits and reads (cooperative, as by default)."""

    member: Any = field(default_factory=lambda: mock.NonCallableMock(assignment=set()))
    cooperative: bool = True
    rebalancing: bool = False
    commits: list[dict[TopicPartition, int]] = field(default_factory=list)
    committed_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    rejoins: list[str] = field(default_factory=list)  # the reasons of the rejoins asked for

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the member owns, as the listener reads them."""
        return frozenset(self.member.assignment)

    def request_rejoin(self, reason: str) -> None:
        self.rejoins.append(reason)

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.commits.append(dict(offsets))
        self.committed_offsets.update(offsets)

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.committed_offsets[tp] for tp in partitions if tp in self.committed_offsets}

    async def check_membership(self) -> None:
        pass

    async def check_generation(self) -> None:
        pass


class FakeRestoreConsumer:
    """Changelogs in memory, behind the RestoreConsumer interface (no group, no commits)."""

    def __init__(self, logs: Logs) -> None:
        self.logs = logs
        self.positions: dict[TopicPartition, int] = {}

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: len(self.logs.get(tp, [])) for tp in tps}

    async def assign_at(self, positions: Mapping[TopicPartition, int | None]) -> None:
        self.positions = {tp: at or 0 for tp, at in positions.items()}

    def assignment(self) -> Set[TopicPartition]:
        return frozenset(self.positions)

    async def fetch(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, ChangelogBatch]:
        out = {}
        for tp, start in self.positions.items():
            batch = self.logs.get(TopicPartition(*tp), [])[start : start + 2]  # several steps
            if batch:
                rows = [(k, v, -1) for k, v in batch]
                out[tp] = ChangelogBatch(rows, start + len(batch), 0)
                self.positions[tp] = start + len(batch)
        return out

    async def position(self, tp: TopicPartition) -> int | None:
        return self.positions.get(tp)

    def highwater(self, tp: TopicPartition) -> int | None:
        return len(self.logs.get(TopicPartition(*tp), []))


@dataclass(frozen=True)
class Delivered:
    """A delivery report's message, as confluent-kafka's ``Message`` answers."""

    _topic: str
    _partition: int
    _offset: int

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset


def fenced() -> KafkaException:
    return KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer epoch", fatal=True))


class FakeClient:
    """confluent-kafka's ``Producer`` in memory: a send is delivered at once (appended to its
    partition's log); a transactional one waits in the open transaction, which its commit
    appends to the logs (what a read_committed reader sees) and its abort drops. A ``fenced``
    client fails to commit or abort, as one whose epoch a newer producer bumped."""

    def __init__(self, logs: Logs, transactional: bool) -> None:
        self.logs = logs
        self.transactional = transactional
        self.pending: list[tuple[TopicPartition, tuple[bytes, bytes | None]]] = []
        self.reports: list[tuple[Callable[[Any, Any], None], Delivered]] = []
        self.offsets_sent: list[dict[TopicPartition, int]] = []
        self.fenced = False
        self.fail_commit = False  # the next commit fails (a broker gone), the abort works
        self.aborts = 0

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        callback: Callable[[Any, Any], None] | None = None,
        on_delivery: Callable[[Any, Any], None] | None = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        """confluent-kafka's signature (the producer calls it positionally)."""
        report = callback or on_delivery
        assert report is not None
        tp = TopicPartition(topic, max(partition, 0))
        if self.transactional:
            self.pending.append((tp, (key, value)))
            offset = len(self.logs.get(tp, [])) + sum(1 for p, _ in self.pending if p == tp) - 1
        else:
            log = self.logs.setdefault(tp, [])
            log.append((key, value))
            offset = len(log) - 1
        self.reports.append((report, Delivered(tp.topic, tp.partition, offset)))

    def poll(self, timeout: float = 0) -> int:
        reports, self.reports = self.reports, []
        for report, message in reports:
            report(None, message)
        return len(reports)

    def flush(self, timeout: float = 0) -> int:
        self.poll()
        return 0

    def purge(self, **_: Any) -> None:
        self.reports.clear()

    def close(self) -> None:
        pass

    def init_transactions(self, timeout: float) -> None:
        pass

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        pass  # the transactional producer's connect() waits for a broker: here at once

    def begin_transaction(self) -> None:
        pass

    def send_offsets_to_transaction(self, parts: Any, metadata: bytes, timeout: float) -> None:
        self.offsets_sent.append({TopicPartition(p.topic, p.partition): p.offset for p in parts})

    def commit_transaction(self, timeout: float) -> None:
        if self.fenced:
            raise fenced()
        if self.fail_commit:
            self.fail_commit = False
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "broker gone"))
        for tp, record in self.pending:
            self.logs.setdefault(tp, []).append(record)
        self.pending.clear()

    def abort_transaction(self, timeout: float) -> None:
        if self.fenced:
            raise fenced()
        self.aborts += 1
        self.pending.clear()


class RigProducer(LibrdkafkaProducer):
    """The real librdkafka producer over a :class:`FakeClient`."""

    def __init__(self, client: FakeClient) -> None:
        super().__init__({})
        self.client = client

    async def start(self) -> None:
        with mock.patch("confluent_kafka.Producer", lambda _config: self.client):
            await super().start()


class RigTxnProducer(TransactionalLibrdkafkaProducer):
    """The real transactional librdkafka producer over a :class:`FakeClient`."""

    def __init__(self, client: FakeClient) -> None:
        super().__init__({}, lambda: GroupMetadata(1, "member-1", None))
        self.client = client
        self.started = self.stopped = False

    async def start(self) -> None:
        with mock.patch("confluent_kafka.Producer", lambda _config: self.client):
            await super().start()
        self.started = True

    async def stop(self) -> None:
        await super().stop()
        self.stopped = True


# -- one stream thread of a word-count app, its clients faked -------------------------------


@dataclass
class Rig:
    thread: StreamThread
    tasks: TaskManager
    listener: MemberListener
    committer: Committer
    consumer: FakeMainConsumer
    membership: FakeMembership
    events: list[tuple[str, dict[str, Any]]]

    def assign(
        self, active: Iterable[str] = (), standby: Iterable[str] = (), followup: bool = False
    ) -> None:
        """What the leader's assignment tells this thread (through the real assignor), and the
        input partitions the member then holds (``followup``: tasks were held back for a
        cooperative second round)."""
        info = AssignmentInfo(tuple(active), (), {}, tuple(standby), followup=followup)
        MemberStreamsAssignor(self.thread.member.assignor()).on_assignment(info.encode())
        self.membership.member.assignment = {
            TopicPartition(INPUT.topic, TaskId.parse(t).partition) for t in info.tasks
        }

    def types(self) -> list[str]:
        return [t for t, _ in self.events]


def rig(
    state_dir: Path,
    index: int,
    logs: Logs,
    producers: list[RigTxnProducer] | None = None,
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
    consumer, membership = FakeMainConsumer(), FakeMembership()
    committer = committer_for(config, thread, consumer, membership, logs, producers)
    tasks = TaskManager.build(
        TaskFactory(env, committer.collector, RecordCache(0)),
        consumer,
        FakeRestoreConsumer(logs),
        TaskEvents(thread.emit, thread.mark, thread.tasks_running),
        thread.name,
    )
    listener = MemberListener(thread, tasks, committer, consumer, membership)  # type: ignore[arg-type]
    return Rig(thread, tasks, listener, committer, consumer, membership, events)


def committer_for(
    config: StreamsConfig,
    thread: StreamThread,
    consumer: FakeMainConsumer,
    membership: FakeMembership,
    logs: Logs,
    producers: list[RigTxnProducer] | None,
) -> Committer:
    if producers is None:
        producer = RigProducer(FakeClient(logs, transactional=False))
        asyncio.run(producer.start())
        collector = LibrdkafkaCollector(producer)
        return AtLeastOnceCommitter(collector, consumer, None, thread.emit, offsets=membership)

    def new_producer() -> RigTxnProducer:
        producers.append(RigTxnProducer(FakeClient(logs, transactional=True)))
        return producers[-1]

    first = new_producer()
    asyncio.run(first.start())
    return ExactlyOnceCommitter(
        LibrdkafkaTransactionalCollector(first),
        consumer,
        None,
        thread.emit,
        config.application_id,
        new_producer,
        thread.name,
        offsets=membership,
    )


async def until_running(r: Rig, steps: int = 20) -> None:
    for _ in range(steps):
        if r.tasks.all_running:
            return
        await r.tasks.step()
    raise AssertionError(f"not running: restoring {r.tasks.restoring}, locked {r.tasks.locked}")
