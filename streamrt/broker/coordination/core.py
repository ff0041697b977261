"""The asyncio machinery both coordinator services own alike (groups, transactions).

Each service runs its state machine's steps under one lock (requests and timer expiries
alike), keeps a lifecycle state (``loading`` → ``active`` → ``stopped``), and appends a step's
records to its compacted internal topic before applying them ("append, then apply"). What
differs (dispatch, replies, markers) stays in the services; this is the part that is the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from streamrt.broker.coordination.appender import CoordinatorRecord, append_records
from streamrt.broker.coordination.loader import LoadStats, RecordSink, replay_partition
from streamrt.broker.coordination.log_writer import CoordinatorLogs, TopicView
from streamrt.broker.coordination.timer import AsyncioTimer, Op, TimerWorker
from streamrt.broker.log.codec import LogBatch
from streamrt.clock import Clock
from streamrt.errors import ErrorCode

__all__ = ("CoordinatorCore",)

_R = TypeVar("_R", bound=CoordinatorRecord)
_T = TypeVar("_T")


class CoordinatorCore:
    """The lock, lifecycle state, timer worker and internal-topic partitions of one coordinator.

    ``on_timer`` runs a timer expiry under the lock (see :class:`TimerWorker`).
    """

    def __init__(
        self,
        name: str,
        logs: CoordinatorLogs,
        topic: str,
        partitions: int,
        clock: Clock,
        on_timer: Callable[[Op], Awaitable[Callable[[], None] | None]],
    ) -> None:
        self.logs = logs
        self.topic = topic
        self.partitions = partitions
        self.clock = clock
        self.lock = asyncio.Lock()
        self.state = "loading"
        self._timers = TimerWorker(name, self.lock, on_timer, lambda: self.state != "stopped")

    @property
    def timer(self) -> AsyncioTimer:
        """The timer the state machine schedules on."""
        return self._timers.timer

    def ensure_topic(self) -> Mapping[str, TopicView]:
        """Create the compacted internal topic, or adopt its partition count; the topics."""
        topics = self.logs.topics()
        if self.topic not in topics:
            config = {"cleanup.policy": "compact"}
            self.logs.create_topic(self.topic, self.partitions, config, internal=True)
        else:
            self.partitions = topics[self.topic].num_partitions
        return topics

    async def load(
        self,
        on_record: RecordSink,
        finish: Callable[[], Awaitable[_T]],
        on_marker: Callable[[LogBatch], None] | None = None,
    ) -> tuple[LoadStats, _T]:
        """Under the lock: replay every partition, start the timers, run ``finish`` (the
        state machine's on-loaded step), then turn active."""
        total = LoadStats()
        async with self.lock:
            for partition in range(self.partitions):
                log = self.logs.log(self.topic, partition)
                stats = replay_partition(log, (self.topic, partition), on_record, on_marker)
                total.loaded += stats.loaded
                total.skipped += stats.skipped
            self._timers.start()
            finished = await finish()
            self.state = "active"
        return total, finished

    async def stop(self, finish: Callable[[], Awaitable[None]] | None = None) -> None:
        """Under the lock: turn stopped and run ``finish`` (the unload step); then stop the
        timers (an expiry already queued is dropped)."""
        async with self.lock:
            self.state = "stopped"
            if finish is not None:
                await finish()
        await self._timers.stop()

    def unavailable(self) -> ErrorCode | None:
        """Why a request cannot be served now (still loading, or stopped); None when active."""
        if self.state == "active":
            return None
        if self.state == "loading":
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.not_coordinator

    def append(
        self,
        records: Sequence[_R],
        owner: Callable[[_R], str],
        producer: tuple[int, int] | None = None,
    ) -> ErrorCode | None:
        """The append half of "append, then apply": one batch per partition of the topic;
        ``None`` once every batch is in the log, else the append's error code."""
        now = self.clock.now_ms()
        return append_records(
            self.logs, self.topic, self.partitions, records, owner, now, producer=producer
        )

    def partition_exists(self, topic: str, partition: int) -> bool:
        """Whether ``topic`` has ``partition`` (the state machines check requests with it)."""
        info = self.logs.topics().get(topic)
        return info is not None and 0 <= partition < info.num_partitions
