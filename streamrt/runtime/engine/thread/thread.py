"""StreamThread: one OS thread, its own event loop, consumer (one group member) and producer.

Thread ``n`` of instance ``web-1`` joins as static member ``web-1-thread-n``; restarted within
the session timeout it gets the same partitions back without a rebalance, finds its stores'
checkpoints equal to the changelog ends, and restores nothing.

The thread keeps the loop, its state transitions and the run-once loop; its tasks belong to
its :class:`TaskManager`, commits to its :class:`Committer` (one per processing guarantee),
the group protocol to its :class:`GroupMember`, its clients to a :class:`ClientFactory`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar, cast

from streamrt.logs import fields
from streamrt.membership.streams_member import (
    ApplicationShutdownError,
    UnsupportedStreamsGroupError,
)
from streamrt.runtime.engine.assignment.assignor import AssignmentInfo
from streamrt.runtime.engine.clients.bootstrap import retry_bootstrap
from streamrt.runtime.engine.clients.clients import ClientFactory, ThreadClients
from streamrt.runtime.engine.clients.rdkafka_txn import is_fenced
from streamrt.runtime.engine.commit.commit import CommitSchedule, TaskMigratedError
from streamrt.runtime.engine.commit.committers import Committer, committer_for
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.eos import TransactionLostError
from streamrt.runtime.engine.main_consumer import MainConsumer
from streamrt.runtime.engine.rebalance.group_member import GroupMember
from streamrt.runtime.engine.rebalance.member_listener import MemberListener, Membership
from streamrt.runtime.engine.rebalance.own_membership import StreamrtMembership
from streamrt.runtime.engine.rebalance.start_ahead import StartAhead
from streamrt.runtime.engine.rebalance.streams_membership import StreamsMembership
from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.runtime.engine.tasks.task_factory import TaskFactory
from streamrt.runtime.engine.tasks.task_inputs import ConsumerLags
from streamrt.runtime.engine.tasks.task_manager import NO_TASKS, TaskEvents, TaskManager
from streamrt.runtime.engine.thread.thread_metrics import LoopMeter, thread_snapshot
from streamrt.runtime.engine.thread.wakeup import Wakeup
from streamrt.runtime.metadata import ALLOWED_PREVIOUS, ThreadMetadata, ThreadState
from streamrt.runtime.sensors import ThreadSensors
from streamrt.runtime.stores import RecordCache

__all__ = ("FatalThreadError", "StreamThread", "ThreadEnv", "ThreadNotRunningError")

T = TypeVar("T")

logger = logging.getLogger(__name__)


class FatalThreadError(Exception):
    """An error that must stop the whole instance (fencing, log_and_fail), not one thread."""


class ThreadNotRunningError(Exception):
    """The thread has no event loop (not started yet, or stopped), or did not answer in time."""


class StreamThread:
    """Responsibilities: the OS thread and its loop, state transitions, the run-once loop."""

    def __init__(self, env: ThreadEnv, index: int, *, held: bool = False) -> None:
        self.env = env
        self.index = index
        app_id, instance = env.config.application_id, env.instance_id
        self.name = f"{instance}-thread-{index}"
        self.thread_instance_id = self.name if env.static else None
        self.client_id = f"{app_id}-{instance}-thread-{index}"
        self.state = ThreadState.CREATED
        self.rebalances = 0
        self.sensors = ThreadSensors()  # stream-thread-metrics, counted by the run loop
        self.error: BaseException | None = None
        # exactly_once_v2: <application.id>-<instance>-thread-<n>, stable under static
        # membership, so a restarted incarnation's InitProducerId fences the crashed one.
        self.transactional_id = f"{app_id}-{self.name}" if env.config.exactly_once else None
        self.member = GroupMember(
            env,
            self.thread_instance_id or self.client_id,
            self.name,
            self.emit,
            lambda: self.generation,
            lambda: self._tasks,
        )
        # Kafka Streams splits statestore.cache.max.bytes evenly over the stream threads
        self._cache = RecordCache(
            env.config.statestore_cache_max_bytes // env.config.num_stream_threads
        )
        self._tasks: TaskManager | None = None  # from the start of the loop on
        self._clients: ThreadClients | None = None
        self._own: Membership | None = None  # from the start of the loop on
        self._stop_requested = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._os_thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._state_lock = threading.Lock()
        self._commit_lock = asyncio.Lock()  # binds to the thread's loop on first use
        self._wakeup = Wakeup()
        self._marked: set[str] = set()
        self.start_ahead = StartAhead(self.mark)  # what starts beside the join
        # Hand-off (streamrt run --handoff): a held thread starts its clients and finds the
        # group coordinator, then waits for release() before it joins. A stopping thread sets
        # ``committed`` once its final commit is done, before it closes its stores: from then
        # on a successor may join (it fences our member, which commits nothing more) and
        # opens each task as soon as we release its directory lock.
        self._hold = threading.Event()
        if not held:
            self._hold.set()
        self._expected_tasks: tuple[str, ...] = ()  # a successor: the old thread's tasks
        self.prepared = threading.Event()  # held: clients up, waiting; or the thread ended
        self.committed = threading.Event()  # stopping: the final commit is done; or it ended
        self.stopped_cleanly = False  # the final commit succeeded (set before ``committed``)

    # -- control from other threads ----------------------------------------------------------

    def start(self) -> None:
        self.transition(ThreadState.STARTING)
        self._os_thread.start()

    def stop(self) -> None:
        """Ask the thread to commit and stop; a waiting poll is woken at once."""
        if not self._stop_requested.is_set():
            self.mark("stop_requested")
        self._stop_requested.set()
        self._wakeup.wake()

    def expect_tasks(self, task_ids: Collection[str]) -> None:
        """Before :meth:`release`: the tasks the old process's thread of the same instance id
        owned; a static rejoin gives them back, so they are opened while the thread joins."""
        self._expected_tasks = tuple(sorted(task_ids))

    def release(self) -> None:
        """Let a held thread join its group (the previous process released the state)."""
        self._hold.set()
        self._wakeup.wake()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until a held thread's clients are up and it waits to join (or it ended)."""
        return self.prepared.wait(timeout)

    def mark(self, name: str) -> None:
        """A hand-off timeline mark (``timeline`` event), once per name and thread."""
        if name in self._marked:
            return
        self._marked.add(name)
        logger.info("timeline", extra=fields(thread=self.name, mark=name, t=round(time.time(), 4)))
        self.emit("timeline", mark=name)

    def emit(self, type_: str, **kv: Any) -> None:
        """A lifecycle event of this thread."""
        self.env.emit(type_, self.index, **kv)

    def join(self, timeout: float | None = None) -> None:
        if self._os_thread.is_alive():
            self._os_thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._os_thread.is_alive()

    @property
    def stopping(self) -> bool:
        """:meth:`stop` was asked (the thread may still be committing and closing)."""
        return self._stop_requested.is_set()

    @property
    def member_id(self) -> str | None:
        """The consumer's member id in the group (assigned by the coordinator), once joined."""
        return self._own.member_id if self._own is not None else None

    @property
    def generation(self) -> int | None:
        """The group generation this thread's consumer last joined."""
        return self._own.generation if self._own is not None else None

    @property
    def assignment_info(self) -> AssignmentInfo | None:
        """What the leader's assignment said to this thread (tasks, standbys, everyone's)."""
        return self.member.assignment_info

    @property
    def tasks(self) -> dict[str, StreamTask]:
        """The assigned tasks (open, restoring or waiting for a lock), by task id."""
        return self._tasks.tasks if self._tasks is not None else {}

    def owns(self, task_id: str) -> bool:
        """True if the task is assigned to this thread (open, restoring or waiting for a lock)."""
        return task_id in self.tasks

    def running_task(self, task_id: str) -> StreamTask | None:
        """The task if it is open and processing here; call on this thread's loop."""
        return self._tasks.running_task(task_id) if self._tasks is not None else None

    def run_on_loop(self, fn: Callable[[], Awaitable[T]], timeout: float) -> T:
        """Run ``fn()`` on this thread's event loop under its commit lock, from another thread.

        Under the lock no task is being processed, committed, closed or opened, so ``fn`` sees
        a consistent state. Raises ThreadNotRunningError if the loop is gone or too slow.
        """
        loop, lock = self._loop, self._commit_lock
        if loop is None or loop.is_closed():
            raise ThreadNotRunningError(f"thread {self.name} is not running")

        async def locked() -> T:
            async with lock:
                return await fn()

        try:
            return asyncio.run_coroutine_threadsafe(locked(), loop).result(timeout)
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            raise ThreadNotRunningError(f"thread {self.name} did not answer: {exc!r}") from exc

    def persist_stores(self, timeout: float = 5.0) -> int:
        """Ahead of a hand-off: have every open task's stores write their memory to disk in the
        background, so the stop's store close is quick. Returns how many tasks were asked."""

        async def persist() -> int:
            return self._tasks.persist() if self._tasks is not None else 0

        return self.run_on_loop(persist, timeout)

    def metadata(self) -> ThreadMetadata:
        return ThreadMetadata(
            thread_name=self.name,
            thread_index=self.index,
            thread_instance_id=self.thread_instance_id,
            client_id=self.client_id,
            state=self.state,
            rebalances=self.rebalances,
            streams=thread_snapshot(self.sensors, self._tasks),
            **(self._tasks.metadata() if self._tasks is not None else NO_TASKS),
        )

    # -- state transitions ---------------------------------------------------------------------

    def transition(self, new: ThreadState) -> None:
        with self._state_lock:
            old = self.state
            if old is new:
                return
            assert old in ALLOWED_PREVIOUS[new], f"thread {self.name}: {old.name} → {new.name}"
            self.state = new
        logger.info("thread state", extra=fields(thread=self.name, old=old.name, new=new.name))
        self.emit("thread_state", old=old.name, new=new.name)

    def tasks_running(self) -> None:
        """Every assigned task is open and restored: after an assignment, the thread runs
        (unless a cooperative second round is still to come: the rebalance is not over)."""
        info = self.member.assignment_info
        if info is not None and info.followup:
            return
        if self.state is ThreadState.PARTITIONS_ASSIGNED:
            self.mark("ready")
            self.transition(ThreadState.RUNNING)

    @property
    def commit_lock(self) -> asyncio.Lock:
        """Held while tasks process, commit, close or open (on this thread's loop)."""
        return self._commit_lock

    async def before_join(self) -> None:
        """After a revocation: list the changelog ends, in case this thread leads the
        assignment that follows (the first join's listing began at start: start_ahead)."""
        if self._clients is not None and not await self.start_ahead.take_ends_listed():
            await self._list_changelog_ends()

    async def _list_changelog_ends(self) -> None:
        clients, own = cast(ThreadClients, self._clients), cast(Membership, self._own)
        # a manual-assign consumer has no source topic metadata: the member's
        counts = await own.partition_counts(self.env.subtopologies)
        partitions_of = lambda topic: range(counts.get(topic, 0))  # noqa: E731
        await self.member.refresh_changelog_ends(clients.offsets_consumer, partitions_of)

    # -- the thread's own loop -----------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self.error = exc
            if is_fenced(exc):
                self.emit("fenced", thread_instance_id=self.thread_instance_id)
                self.error = FatalThreadError(
                    f"FENCED_INSTANCE_ID: group.instance.id {self.thread_instance_id} is used by "
                    "another process of this application; stopping this instance"
                )
            elif isinstance(exc, UnsupportedStreamsGroupError | ApplicationShutdownError):
                self.error = FatalThreadError(str(exc))  # every thread would fail alike
            logger.error(
                "stream thread died",
                exc_info=not isinstance(self.error, FatalThreadError),
                extra=fields(thread=self.name, error=str(self.error)),
            )
        finally:
            if self.state not in (ThreadState.DEAD, ThreadState.PENDING_SHUTDOWN):
                self.transition(ThreadState.PENDING_SHUTDOWN)
            self.transition(ThreadState.DEAD)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wakeup.bind()
        if self._stop_requested.is_set():
            return
        own = self._own = self._membership()
        factory = ClientFactory(
            self.env,
            self.client_id,
            self.thread_instance_id,
            self.transactional_id,
            own.group_metadata,
        )
        clients = self._clients = factory.build()
        committer = committer_for(
            self.env.config,
            clients,
            self.emit,
            lambda: factory.thread_producer(clients.admin),  # a renewal settles on its admin
            self.name,
            offsets=own,
        )
        tasks = self._tasks = TaskManager.build(
            TaskFactory(self.env, committer.collector, self._cache),
            clients.consumer,
            clients.restore_consumer,
            TaskEvents(self.emit, self.mark, self.tasks_running),
            self.name,
            ConsumerLags(clients.consumer, read_committed=self.env.config.exactly_once),
            offsets_consumer=clients.offsets_consumer,
        )
        # Under EOS the producer starts once released (a held successor's InitProducerId would
        # fence the running process), beside the join, and is awaited before any task opens:
        # it aborts a crashed incarnation's open transaction, which releases the changelogs'
        # last stable offset before the restore reads them (start_ahead.py).
        eos = self.env.config.exactly_once
        opened = await clients.start(producer=not eos)
        self.start_ahead.list_ends(self._list_changelog_ends)  # the first join's listing
        changelogs = factory.changelog_topics()
        self.start_ahead.look_up(lambda: clients.restore_consumer.look_up(changelogs))
        listener = MemberListener(self, tasks, committer, clients.consumer, own)
        try:
            if await self._join(factory, clients, listener):
                await self._run_loop(clients.consumer, tasks, committer)
                await self._final_commit(tasks, committer)
        finally:
            # before "committed" lets a hand-off successor join: from now on this consumer
            # never joins again (a late rejoin would take the instance id back and fence it)
            await own.retire()
            self.prepared.set()
            self.committed.set()
            await self.start_ahead.settle()
            await tasks.close_all()
            self.mark("stores_closed")
            await clients.close_consumers(self._stop_requested.is_set(), self.name)
            await committer.close(producer_started=opened or self.start_ahead.producer_started)
            self.mark("clients_closed")

    def _membership(self) -> Membership:
        """``group.protocol``: classic (our member, the leader's assignor) or streams."""
        if self.env.config.streams_protocol:
            return StreamsMembership(self.env, self.client_id, self.thread_instance_id, self.member)
        assignor = self.member.assignor()
        return StreamrtMembership(self.env, self.client_id, self.thread_instance_id, assignor)

    async def _join(
        self,
        factory: ClientFactory,
        clients: ThreadClients,
        listener: MemberListener,
    ) -> bool:
        """Connect, load metadata and find the group coordinator; a held thread then waits for
        release(). Subscribes (or starts our member), unless asked to stop first (False)."""
        await clients.consumer.start()
        await listener.membership.find_coordinator()
        if not self._hold.is_set():
            await factory.warm_offsets_consumer(clients.offsets_consumer)
        self.mark("prepared")
        self.prepared.set()
        await self._wakeup.wait_until(lambda: self._hold.is_set() or self._stop_requested.is_set())
        if self._stop_requested.is_set():
            return False
        self.mark("released")
        if self.env.config.exactly_once:  # beside the join (start_ahead.py)
            producer = clients.producer
            self.start_ahead.start_producer(lambda: retry_bootstrap(producer.start, "producer"))
        listener.membership.start(listener)
        self.mark("join_requested")
        if self._expected_tasks and self._tasks is not None:
            self._tasks.start_open_ahead(self._expected_tasks)
        return True

    async def _final_commit(self, tasks: TaskManager, committer: Committer) -> None:
        self.mark("stop_noticed")
        self.transition(ThreadState.PENDING_SHUTDOWN)
        try:
            async with self.commit_lock:
                await committer.commit(tasks)
        except TaskMigratedError as exc:  # nothing committed: the tasks close dirty, no rejoin
            self.emit("tasks_migrated", tasks=sorted(tasks.tasks), error=str(exc))
            async with self.commit_lock:
                await committer.lose(tasks, list(tasks.tasks))
            return
        self.mark("committed")
        # refused for now (CommitDeferredError): the tasks still hold their offsets, and no
        # later commit comes: not a clean stop, their input is read again by the next owner
        deferred = sorted(str(t.task_id) for t in tasks.open_tasks() if t.processed)
        if deferred:
            self.emit("final_commit_deferred", tasks=deferred)
            return
        self.stopped_cleanly = True

    async def _migrated(self, exc: TaskMigratedError, tasks: TaskManager, c: Committer) -> None:
        """Kafka Streams' TaskMigratedException: every task closes dirty (its checkpoint stays
        where the last accepted commit put it) and the thread rejoins."""
        self.emit("tasks_migrated", tasks=sorted(tasks.tasks), error=str(exc))
        if self._own is not None:  # its listener closes the tasks of the lost partitions,
            await self._own.lose_all()  # unless its group loop did already (and rejoined)

    async def _run_loop(
        self, consumer: MainConsumer, tasks: TaskManager, committer: Committer
    ) -> None:
        """The process loop; under EOS a lost transaction closes the tasks dirty and the loop
        goes on with a fresh producer (Kafka Streams' TaskMigrated/TaskCorrupted handling)."""
        while True:
            try:
                await self._loop_until_stopped(consumer, tasks, committer)
                return
            except TaskMigratedError as exc:
                await self._migrated(exc, tasks, committer)
            except TransactionLostError as exc:  # librdkafka's transactional errors, mapped
                if not committer.recovers(exc):
                    raise
                try:
                    async with self.commit_lock:
                        await committer.recover(exc, tasks)
                except TaskMigratedError as migrated:
                    await self._migrated(migrated, tasks, committer)

    async def _loop_until_stopped(
        self, consumer: MainConsumer, tasks: TaskManager, committer: Committer
    ) -> None:
        schedule = CommitSchedule(self.env.clock, self.env.config.commit_interval_ms)
        own = self._own
        assert own is not None  # set before the loop starts
        rejoin = lambda: own.request_rejoin("probing rebalance")  # noqa: E731
        meter = LoopMeter(self.sensors)
        await self.start_ahead.producer_ready()
        while not self._stop_requested.is_set():
            own.raise_if_failed()
            # While stores restore, do not block on the (paused) inputs: restoring is the work.
            # A task waiting for a lock (a previous owner still closing it) retries every 10 ms;
            # one waiting for input on another partition (max.task.idle.ms) looks again as often.
            timeout_ms = 0 if tasks.restoring else 10 if tasks.locked or tasks.buffered else 100
            stopping = self._stop_requested.is_set
            batches = await meter.poll(self._wakeup.poll(consumer, timeout_ms, stopping))
            if batches:
                self.mark("first_fetch")
            # getmany returns already fetched records without yielding to the event loop; yield
            # once per poll so the producer's sender (linger) and the fetcher run in between.
            await asyncio.sleep(0)
            async with self.commit_lock:
                await tasks.step()
                now_ms = self.env.clock.now_ms()
                if await meter.process(tasks, tasks.process(batches, now_ms, stopping)):
                    self.mark("first_record")
                meter.punctuate(tasks, self.env.clock.now_ms())
                await committer.collector.drain()
                if schedule.due() and not own.rebalancing:
                    await meter.commit(committer.commit(tasks))
                    schedule.committed()
                self.member.maybe_probe(rejoin)
