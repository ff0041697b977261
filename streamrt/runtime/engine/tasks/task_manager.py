"""TaskManager: a stream thread's tasks from assignment to close (Kafka Streams' TaskManager).

On an assignment it closes the tasks the thread no longer owns, updates the standbys, creates
the new active tasks with their input paused, and opens each as soon as its state directory
lock is free (another thread or process may still be closing it). An opened task restores its
stores from their changelogs; only then is its input resumed. On revocation, after a lost
transaction and at shutdown it closes tasks.

The group consumer is reached only through :class:`PartitionControl` (pause and resume) and
the changelogs only through the restore consumer (:class:`~.restore_consumer.RestoreConsumer`),
so a test drives the whole lifecycle with two fake consumers and real tasks on disk.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any, Protocol

from streamrt.logs import fields
from streamrt.runtime.engine.env import Emit
from streamrt.runtime.engine.restore.restore import ChangelogRestorer
from streamrt.runtime.engine.restore.standby import StandbyUpdater
from streamrt.runtime.engine.restore_consumer import EndOffsets, RestoreConsumer
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId
from streamrt.runtime.engine.tasks.task_factory import TaskFactory
from streamrt.runtime.engine.tasks.task_inputs import LagReader, TaskInputs, caught_up
from streamrt.runtime.engine.tasks.task_progress import task_progress
from streamrt.state import StateLockedError
from streamrt.topic_partition import TopicPartition

__all__ = ("PartitionControl", "TaskEvents", "TaskManager")

logger = logging.getLogger(__name__)


class PartitionControl(Protocol):
    """What the TaskManager needs of the group consumer: hold a task's input until it is ready."""

    def assignment(self) -> Set[TopicPartition]: ...

    def pause(self, *partitions: TopicPartition) -> None: ...

    def resume(self, *partitions: TopicPartition) -> None: ...

    def seek(self, partition: TopicPartition, offset: int) -> None: ...

    def highwater(self, partition: TopicPartition) -> int | None: ...


@dataclass(frozen=True, slots=True)
class TaskEvents:
    """How the TaskManager tells its thread what happened."""

    emit: Emit  # a lifecycle event: emit(type, **fields)
    mark: Callable[[str], None]  # a hand-off timeline mark (once per name)
    on_running: Callable[[], None]  # every assigned task is open and restored


class TaskManager:
    """Responsibilities: create, lock, restore, resume and close the thread's active tasks;
    keep its standbys in step; say which task takes a partition's records."""

    def __init__(
        self,
        factory: TaskFactory,
        consumer: PartitionControl,
        restorer: ChangelogRestorer,
        standbys: StandbyUpdater,
        events: TaskEvents,
        thread_name: str,
        inputs: TaskInputs | None = None,
    ) -> None:
        self.factory = factory
        # each running task's buffered records, taken in timestamp order (max.task.idle.ms)
        self.inputs = inputs or TaskInputs(factory.env.config.max_task_idle_ms)
        self.consumer = consumer
        self.restorer = restorer
        self.standbys = standbys
        self.events = events
        self.thread_name = thread_name
        self.tasks: dict[str, StreamTask] = {}  # assigned: open, restoring or waiting for a lock
        self.restoring: set[str] = set()
        self.locked: set[str] = set()  # created, the directory lock not taken yet
        self.previous: tuple[str, ...] = ()  # the last assignment's active tasks
        self.records_processed_closed = 0
        self.tasks_created = 0  # task-created-total
        self.tasks_closed = 0  # task-closed-total
        self._by_input: dict[TopicPartition, StreamTask] = {}  # kept with self.tasks, not per poll
        self._lock_warned: set[str] = set()
        # a hand-off successor's tasks opened while it joins (open_ahead), taken by create()
        self._ahead: dict[str, StreamTask] = {}
        self._ahead_wanted: set[str] = set()
        self._opening_ahead: asyncio.Task[None] | None = None

    @classmethod
    def build(
        cls,
        factory: TaskFactory,
        consumer: PartitionControl,
        restore_consumer: RestoreConsumer,
        events: TaskEvents,
        thread_name: str,
        lags: LagReader = caught_up,
        offsets_consumer: EndOffsets | None = None,
    ) -> TaskManager:
        """Restorer and standbys share the restore consumer; standbys pause while actives
        restore (the restorer then owns it). Both list changelog ends with
        ``offsets_consumer`` (default: the restore consumer), so a restore check never waits
        for the standbys' Fetch. ``lags`` reads an input partition's fetched lag."""
        restorer = ChangelogRestorer(restore_consumer, thread_name, events.emit, offsets_consumer)
        standbys = StandbyUpdater(
            restore_consumer,
            factory.standby,
            lambda: bool(restorer.restoring),
            thread_name,
            events.emit,
            offsets_consumer,
        )
        inputs = TaskInputs(factory.env.config.max_task_idle_ms, lags)
        return cls(factory, consumer, restorer, standbys, events, thread_name, inputs)

    # -- what the thread asks ----------------------------------------------------------------

    @property
    def all_running(self) -> bool:
        """Every assigned task is open and restored."""
        return not self.restoring and not self.locked

    def open_tasks(self) -> list[StreamTask]:
        """The tasks whose stores are open (restoring or running): the ones a commit covers."""
        return [t for tid, t in self.tasks.items() if tid not in self.locked]

    def running_task(self, task_id: str) -> StreamTask | None:
        """The task if it is open and processing here."""
        if task_id in self.restoring or task_id in self.locked:
            return None
        return self.tasks.get(task_id)

    def task_for(self, partition: TopicPartition) -> StreamTask | None:
        """The task that processes this input partition's records now (None: not yet)."""
        task = self._by_input.get(partition)
        if task is None or str(task.task_id) in self.restoring:
            return None
        return task

    def tasks_of(self, partitions: Iterable[TopicPartition]) -> list[str]:
        """The tasks reading any of these input partitions (revoked: they close)."""
        wanted = set(partitions)
        return [tid for tid, t in self.tasks.items() if wanted & set(t.inputs)]

    # -- lifecycle ---------------------------------------------------------------------------

    async def assign(self, active: Iterable[str], standby: Iterable[str]) -> None:
        """Make the thread's tasks ``active`` (and its standbys ``standby``).

        Tasks no longer wanted close first, then standbys no longer wanted (or active here,
        whose directory the active needs), so that their directory locks are free when the
        new tasks try them.
        """
        wanted = set(active)
        await self.close([t for t in self.tasks if t not in wanted])
        self._ahead_wanted.clear()  # the assignment is in: opening ahead is over
        for task_id in [t for t in self._ahead if t not in wanted]:
            self._ahead.pop(task_id).close()
        for task_id in sorted(wanted - set(self.tasks) - set(self._ahead)):
            self._promote(task_id)
        await self.standbys.update(t for t in standby if t not in self.tasks)
        for task_id in sorted(wanted - set(self.tasks)):
            self.create(TaskId.parse(task_id))
        await self.retry_locked()
        self.previous = tuple(sorted(wanted))

    def start_open_ahead(self, task_ids: Iterable[str]) -> None:
        """:meth:`open_ahead` in the background (ended by :meth:`close_all` if still on)."""
        self._opening_ahead = asyncio.create_task(
            self.open_ahead(task_ids), name=f"{self.thread_name}-open-ahead"
        )

    async def open_ahead(self, task_ids: Iterable[str], timeout_s: float = 10.0) -> None:
        """A hand-off successor, while it joins: open the tasks it expects (those of the old
        process's thread with the same ``group.instance.id``, which a static rejoin gives it
        back) as soon as the old process frees each directory lock, so that the assignment
        finds their stores open instead of opening them after the join. Tasks the assignment
        does not give are closed; ones it gives before they are open here open the usual way.
        """
        self._ahead_wanted = {t for t in task_ids if t not in self.tasks}
        deadline = time.monotonic() + timeout_s
        while self._ahead_wanted and time.monotonic() < deadline:
            for task_id in sorted(self._ahead_wanted):
                if task_id not in self._ahead_wanted:  # the assignment came meanwhile
                    continue
                task = self.factory.active(TaskId.parse(task_id))
                try:
                    await _open_off_loop(task)
                except StateLockedError:
                    continue  # the old process still closes it: next round
                if task_id not in self._ahead_wanted and task_id not in self.locked:
                    task.close()  # the assignment came meanwhile, without it
                    continue
                self._ahead_wanted.discard(task_id)
                self._ahead[task_id] = task  # create() or retry_locked() takes it
                logger.info(
                    "task opened ahead of the assignment",
                    extra=fields(thread=self.thread_name, task=task_id),
                )
                if not self._ahead_wanted:
                    self.events.mark("stores_opened_ahead")
                await asyncio.sleep(0)  # the join goes on between two opens
            if self._ahead_wanted:
                await asyncio.sleep(0.01)
        self._ahead_wanted.clear()

    def _promote(self, task_id: str) -> None:
        """A standby of ``task_id`` here becomes its active task: the active task takes the
        standby's open stores (Kafka recycles the task) instead of closing and reopening
        them, and :meth:`create` finds it open."""
        state = self.standbys.release(task_id)
        if state is None:
            return
        task = self.factory.active(TaskId.parse(task_id))
        if state.registrations != task.state.registrations:
            state.close()  # stores the standby keeps otherwise: reopen
            return
        task.state = state
        task.open()  # the stores are open: this inits the processors
        self._ahead[task_id] = task
        self.events.emit("standby_promoted", task=task_id)

    def create(self, task_id: TaskId) -> None:
        """A new task, its input paused; it opens once its directory lock is free (or is
        open already: opened ahead during a hand-off's join, or recycled from a standby)."""
        task = self._ahead.pop(str(task_id), None) or self.factory.active(task_id)
        self.tasks_created += 1
        self.tasks[str(task_id)] = task
        self._by_input.update((tp, task) for tp in task.inputs)
        self.locked.add(str(task_id))
        assigned = self.consumer.assignment()
        self.consumer.pause(*[tp for tp in task.inputs if tp in assigned])

    async def reopen(self, task_ids: Iterable[str]) -> None:
        """Create closed tasks again (after a lost transaction) and open what can be."""
        for task_id in task_ids:
            self.create(TaskId.parse(task_id))
        await self.retry_locked()

    async def retry_locked(self) -> None:
        """Open tasks whose directory lock is free and start restoring them."""
        for task_id in sorted(self.locked):
            ahead = self._ahead.pop(task_id, None)
            if ahead is not None:  # opened ahead while this one waited for the lock
                self.tasks[task_id] = ahead
                self._by_input.update((tp, ahead) for tp in ahead.inputs)
            task = self.tasks[task_id]
            try:
                if not task.state.is_open:  # opened ahead (hand-off): go on to the restore
                    task.open()
            except StateLockedError as exc:
                if task_id not in self._lock_warned:  # retried every 10 ms: say it once
                    self._lock_warned.add(task_id)
                    logger.warning(
                        "task state is locked, will retry",
                        extra=fields(thread=self.thread_name, task=task_id, error=str(exc)),
                    )
                continue
            self._lock_warned.discard(task_id)
            self.locked.discard(task_id)
            self.restoring.add(task_id)
            if not self.locked:
                self.events.mark("stores_opened")
            self.events.emit("restore_check", task=task_id)
            if await self.restorer.add(task.state):
                self._ready(task)

    async def step(self) -> None:
        """Between process batches: retry locks, restore a batch, update the standbys."""
        await self.retry_locked()
        for task_id in await self.restorer.step():
            self._ready(self.tasks[task_id])
        await self.standbys.step()

    def _ready(self, task: StreamTask) -> None:
        task_id = str(task.task_id)
        self.restoring.discard(task_id)
        self.inputs.open(task)
        self.consumer.resume(*task.inputs)
        self.events.emit("restore_ready", task=task_id)
        if self.all_running:
            self.events.on_running()

    @property
    def buffered(self) -> bool:
        """Some running task has polled records it has not processed yet."""
        return any(self.inputs.buffered(tid) for tid in self.tasks)

    async def process(
        self,
        batches: Mapping[TopicPartition, list[Any]],
        now_ms: int,
        stopping: Callable[[], bool] = lambda: False,
    ) -> int:
        """Buffer polled records with their tasks, then run every task that may process
        (its PartitionGroup: timestamp order, ``max.task.idle.ms``) until ``stopping`` says
        the thread stops; returns how many ran.

        A RecordFailedError (the handler said FAIL) propagates and ends the thread.
        """
        for ktp, records in batches.items():
            task = self.task_for(ktp)
            if task is None or not self.inputs.add(task, ktp, records):
                self._unread(ktp, records)
        await self.inputs.update_lags()
        return self.inputs.process(now_ms, stopping)

    def _unread(self, ktp: TopicPartition, records: list[Any]) -> None:
        """Put records no task can take back on the consumer. A partition is fetchable from
        the moment aiokafka assigns it, before the assignment (which waits for the commit lock)
        has created and paused its task: the getmany in between returned those records and,
        dropped, they were skipped for good (the rolling-deploy state-size sweep lost 49 clicks
        that way). Seeking back re-reads them once the task is ready."""
        if records and ktp in self.consumer.assignment():
            self.consumer.seek(ktp, records[0].offset)

    def punctuate(self, now_ms: int) -> int:
        """Run due wall-clock punctuators; returns how many ran."""
        running = [t for tid, t in self.tasks.items() if tid not in self.restoring]
        return sum(t.punctuate(now_ms) for t in running)

    @property
    def records_processed(self) -> int:
        """Records the thread's tasks processed, closed tasks included."""
        tasks = list(self.tasks.values())
        return self.records_processed_closed + sum(t.records_processed for t in tasks)

    def persist(self) -> int:
        """Have every open task's stores write their memory to disk in the background (ahead
        of a hand-off, so the stop's close is quick). Returns how many tasks were asked."""
        tasks = self.open_tasks()
        for task in tasks:
            task.state.persist()
        return len(tasks)

    async def close(self, task_ids: Iterable[str]) -> None:
        """Close these tasks (their stores and directory locks); unknown ids are skipped."""
        for task_id in task_ids:
            task = self.tasks.pop(task_id, None)
            if task is None:
                continue
            for tp in task.inputs:
                self._by_input.pop(tp, None)
            await self.restorer.remove(task_id)
            self.inputs.close(task_id)
            self.restoring.discard(task_id)
            self.locked.discard(task_id)
            self.records_processed_closed += task.records_processed
            self.tasks_closed += 1
            task.close()

    async def close_all(self) -> None:
        """At shutdown: every active task (and any opened ahead), then every standby."""
        if self._opening_ahead is not None:
            self._opening_ahead.cancel()
            await asyncio.gather(self._opening_ahead, return_exceptions=True)
        self._ahead_wanted.clear()
        for task in self._ahead.values():
            task.close()
        self._ahead.clear()
        await self.close(list(self.tasks))
        self.standbys.close_all()

    # -- what the thread reports -------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The task part of the thread's :class:`ThreadMetadata` (read from other threads)."""
        tasks = dict(self.tasks)
        stats = self.restorer.stats
        standbys = self.standbys
        return {
            "active_tasks": tuple(sorted(tasks, key=lambda t: TaskId.parse(t))),
            "restoring_tasks": tuple(sorted(self.restoring)),
            "topic_partitions": tuple(sorted(tp for t in tasks.values() for tp in t.inputs)),
            "records_processed": self.records_processed,
            "records_restored": stats.records,
            "bytes_restored": stats.bytes,
            "restore_time_ms": round(stats.seconds * 1000, 3),
            "standby_tasks": standbys.task_ids,
            "standby_lags": standbys.lags(),
            "standby_records_applied": standbys.records_applied,
            **task_progress(tasks, self.consumer, self.restorer),
        }


#: :meth:`TaskManager.metadata` of a thread whose clients have not started yet.
NO_TASKS: dict[str, Any] = {
    "active_tasks": (),
    "restoring_tasks": (),
    "topic_partitions": (),
    "records_processed": 0,
    "records_restored": 0,
    "bytes_restored": 0,
    "restore_time_ms": 0.0,
}


async def _open_off_loop(task: StreamTask) -> None:
    """``task.open()`` on a worker thread, so the join's requests and answers go on meanwhile;
    cancelled (the thread stops), it waits for the open to end and closes the task again, so
    no store or directory lock is left open behind it."""
    opening = asyncio.ensure_future(asyncio.to_thread(task.open))
    try:
        await asyncio.shield(opening)
    except asyncio.CancelledError:
        await asyncio.wait((opening,))
        if not opening.cancelled() and opening.exception() is None:
            task.close()
        raise
