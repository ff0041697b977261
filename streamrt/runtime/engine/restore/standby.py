"""Standby tasks: a task's stores kept following its changelog on another instance.

A :class:`StandbyTask` is a :class:`~streamrt.state.StateManager` and nothing else: no
processors run and nothing is produced. Its stores apply changelog records through the same
``StateManager.restore_batch`` path restoration uses, so when the task becomes active here the
restorer finds the stores at (or near) the changelog end and restores only the lag.

The :class:`StandbyUpdater` polls every standby changelog of a thread with the thread's restore
consumer (:mod:`.restore_consumer`: librdkafka's on the librdkafka data path), between
processing batches. As in Kafka Streams, standbys pause while an active task
of the thread restores (the restore consumer then belongs to the restorer); they checkpoint on
each commit and at close, so the subscription reports how far they are and the leader can
prefer a caught-up instance.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from streamrt.logs import fields
from streamrt.runtime.engine.clients.end_offsets import end_offsets_through_faults
from streamrt.runtime.engine.restore.changelog_reader import ChangelogReader
from streamrt.runtime.engine.restore_consumer import ChangelogBatch, EndOffsets, RestoreConsumer
from streamrt.runtime.graph.topology import SubTopology, Topology, changelog_topic
from streamrt.state import ROCKS_DB, StateLockedError, StateManager, StoreKind
from streamrt.topic_partition import TopicPartition

__all__ = ("StandbyTask", "StandbyUpdater")

logger = logging.getLogger(__name__)


class StandbyTask:
    """Responsibilities: register and open a task's stores, follow their changelogs, report
    lag, checkpoint."""

    def __init__(
        self,
        task_id: str,
        subtopology: SubTopology,
        topology: Topology,
        application_id: str,
        state_dir: Path,
        *,
        default_store: StoreKind = ROCKS_DB,
    ) -> None:
        self.task_id = task_id
        partition = int(task_id.partition("_")[2])
        self.state = StateManager(task_id, state_dir / application_id / task_id)
        for name in subtopology.stores:
            spec = topology.stores[name]
            self.state.register(
                name,
                TopicPartition(changelog_topic(application_id, name), partition),
                spec.kind or default_store,
                segments=spec.segments,  # the active task's layout: it opens this directory
                timestamped=spec.timestamped,
            )
        self.ends: dict[TopicPartition, int] = {}  # last known changelog end per partition
        self.records_applied = 0

    @property
    def changelogs(self) -> tuple[TopicPartition, ...]:
        return self.state.changelog_partitions

    def open(self) -> None:
        """Lock the directory and open the stores (StateLockedError if another owner has it)."""
        self.state.open()

    @property
    def is_open(self) -> bool:
        return self.state.is_open

    def apply(self, changelog: TopicPartition, batch: ChangelogBatch) -> None:
        """Write one fetched batch into the store, with the offset after it."""
        if not batch.rows:
            return
        self.state.restore_batch(changelog, batch.rows, batch.next_offset)
        self.records_applied += len(batch.rows)

    def lag(self) -> int:
        """Changelog records not yet applied, summed over the task's stores."""
        if not self.is_open:
            return sum(self.ends.values())
        positions = self.state.positions()
        return sum(max(0, end - (positions.get(tp) or 0)) for tp, end in self.ends.items())

    def checkpoint(self) -> None:
        """Refresh the checkpoint hint (the stores already hold their offsets: every applied
        batch was written with it)."""
        if self.is_open:
            self.state.write_checkpoint()

    def close(self) -> None:
        """Checkpoint, close the stores, release the directory."""
        if self.is_open:
            self.checkpoint()
            self.state.close()


class StandbyUpdater(ChangelogReader):
    """Responsibilities: own a thread's standby tasks, open them (retrying locks), poll their
    changelogs with the restore consumer while nothing restores, expose their lag.

    :param busy: True while the thread's restorer uses the restore consumer.
    :param offsets: lists the changelog ends (default: ``consumer``).
    """

    def __init__(
        self,
        consumer: RestoreConsumer,
        make_task: Callable[[str], StandbyTask],
        busy: Callable[[], bool],
        thread_name: str,
        emit: Callable[..., Any] | None = None,
        offsets: EndOffsets | None = None,
    ) -> None:
        super().__init__(consumer, thread_name, emit, offsets)
        self._make_task = make_task
        self._busy = busy
        self.tasks: dict[str, StandbyTask] = {}
        self.records_applied_closed = 0
        self._by_changelog: dict[TopicPartition, StandbyTask] = {}
        self._assigned: frozenset[TopicPartition] = frozenset()

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self.tasks))

    @property
    def records_applied(self) -> int:
        return self.records_applied_closed + sum(t.records_applied for t in self.tasks.values())

    def lags(self) -> dict[str, int]:
        """Task id → changelog records the standby has not applied yet."""
        return {task_id: task.lag() for task_id, task in sorted(self.tasks.items())}

    async def update(self, wanted: Iterable[str]) -> None:
        """Make the standby set ``wanted``: close the others (before any active of the same
        task opens its directory), create and try to open the new ones."""
        wanted_set = set(wanted)
        for task_id in sorted(set(self.tasks) - wanted_set):
            self._close(task_id)
        for task_id in sorted(wanted_set - set(self.tasks)):
            task = self._make_task(task_id)
            if not task.changelogs:
                continue  # a stateless task has nothing to follow
            self.tasks[task_id] = task
            self.emit("standby_created", task=task_id)
        await self._open_pending()

    async def _open_pending(self) -> None:
        for task_id, task in sorted(self.tasks.items()):
            if task.is_open:
                continue
            try:
                task.open()
            except StateLockedError as exc:
                logger.info(
                    "standby state is locked, will retry",
                    extra=fields(thread=self.thread_name, task=task_id, error=str(exc)),
                )
                continue
            changelogs = list(task.changelogs)
            ends = await end_offsets_through_faults(self.offsets, changelogs)
            task.ends = {tp: ends[tp] for tp in task.changelogs}
            for tp in task.changelogs:
                self._by_changelog[tp] = task
            self.emit("standby_opened", task=task_id, lag=task.lag())

    async def step(self, timeout_ms: int = 0) -> int:
        """Apply what the restore consumer fetched for the standbys; returns records applied.

        Does nothing while the restorer owns the consumer (an active task restores)."""
        if not self.tasks or self._busy():
            return 0
        if any(not t.is_open for t in self.tasks.values()):
            await self._open_pending()
        await self._ensure_assigned()
        if not self._assigned:
            return 0
        batches = await self.consumer.fetch(timeout_ms, max_records=5000)
        applied = 0
        for tp, batch in batches.items():
            task = self._by_changelog.get(tp)
            if task is None or not task.is_open:
                continue
            task.apply(tp, batch)
            applied += len(batch.rows)
        for tp in self._assigned:
            task = self._by_changelog[tp]
            high = self.consumer.highwater(tp)
            if high is not None:
                task.ends[tp] = max(task.ends.get(tp, 0), high)
        return applied

    async def _ensure_assigned(self) -> None:
        """(Re)assign the standby changelogs if the restorer or a change took the consumer,
        seeking each to the offset its store holds."""
        wanted = frozenset(tp for tp, t in self._by_changelog.items() if t.is_open)
        if wanted == self._assigned and self.consumer.assignment() == wanted:
            return
        await self.consumer.assign_at(
            {tp: self._by_changelog[tp].state.position(tp) for tp in sorted(wanted)}
        )
        self._assigned = wanted

    def release(self, task_id: str) -> StateManager | None:
        """Give up the standby ``task_id`` without closing its stores: its open state, for
        the active task it becomes (None: no such standby, or its stores are not open)."""
        task = self.tasks.get(task_id)
        if task is None or not task.is_open:
            return None
        del self.tasks[task_id]
        for tp in task.changelogs:
            self._by_changelog.pop(tp, None)
        self._assigned = frozenset(tp for tp in self._assigned if tp in self._by_changelog)
        self.records_applied_closed += task.records_applied
        task.checkpoint()
        self.emit("standby_released", task=task_id, lag=task.lag())
        return task.state

    def checkpoint(self) -> None:
        """On commit: refresh every standby's checkpoint hint."""
        for task in self.tasks.values():
            task.checkpoint()

    def _close(self, task_id: str) -> None:
        task = self.tasks.pop(task_id)
        for tp in task.changelogs:
            self._by_changelog.pop(tp, None)
        self._assigned = frozenset(tp for tp in self._assigned if tp in self._by_changelog)
        self.records_applied_closed += task.records_applied
        lag = task.lag()
        task.close()
        self.emit("standby_closed", task=task_id, lag=lag)

    def close_all(self) -> None:
        for task_id in sorted(self.tasks):
            self._close(task_id)
