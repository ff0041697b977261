"""StreamThread: one OS thread, its own event loop, consumer (one group member) and producer.

Thread ``n`` of instance ``web-1`` joins as static member ``web-1-thread-n``; restarted within
the session timeout it gets the same partitions back without a rebalance, finds its stores'
checkpoints equal to the changelog ends, and restores nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiokafka.errors as kafka_errors
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.clock import Clock, SystemClock
from streamrt.logs import fields
from streamrt.runtime import client_settings, kafka_adapter
from streamrt.runtime.assignor import (
    AssignmentInfo,
    PlacementConfig,
    StreamsPartitionAssignor,
    SubscriptionInfo,
    TaskPlacement,
)
from streamrt.runtime.changelog_ends import ChangelogEnds
from streamrt.runtime.collector import ProducerCollector
from streamrt.runtime.commit import CommitSchedule, commit
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.eos import (
    TRANSACTION_TIMEOUT_MS,
    TransactionalCollector,
    abort_transaction,
    commit_transaction,
)
from streamrt.runtime.exception_handlers import RecordErrorHandlers
from streamrt.runtime.metadata import ALLOWED_PREVIOUS, ThreadMetadata, ThreadState
from streamrt.runtime.purge import RepartitionPurger
from streamrt.runtime.restore import ChangelogRestorer
from streamrt.runtime.standby import StandbyTask, StandbyUpdater
from streamrt.runtime.stores import RecordCache
from streamrt.runtime.task import StreamTask, TaskId, TopicPartition
from streamrt.runtime.task_progress import task_progress
from streamrt.runtime.topology import SubTopology, Topology, changelog_topic
from streamrt.state import StateLockedError, read_checkpoint_hint

__all__ = ("FatalThreadError", "StreamThread", "ThreadEnv", "ThreadNotRunningError")

T = TypeVar("T")

logger = logging.getLogger(__name__)


class FatalThreadError(Exception):
    """An error that must stop the whole instance (fencing, log_and_fail), not one thread."""


class ThreadNotRunningError(Exception):
    """The thread has no event loop (not started yet, or stopped), or did not answer in time."""


@dataclass(frozen=True, slots=True)
class ThreadEnv:
    """What every thread of an instance shares."""

    config: StreamsConfig
    topology: Topology
    subtopologies: tuple[SubTopology, ...]
    instance_id: str
    static: bool
    emit: Callable[..., None]  # emit(type, thread_index, **fields)
    clock: Clock = field(default_factory=SystemClock)  # punctuation and commit interval
    errors: RecordErrorHandlers = field(default_factory=RecordErrorHandlers)  # shared counters


class _ConsumerCommitter:
    """Step 3 of a commit: the group consumer commits input offsets."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        await self._consumer.commit({KafkaTP(*tp): off for tp, off in offsets.items()})


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, thread: StreamThread) -> None:
        self.thread = thread

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.thread.on_revoked([TopicPartition(tp.topic, tp.partition) for tp in revoked])

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.thread.on_assigned([TopicPartition(tp.topic, tp.partition) for tp in assigned])


class StreamThread:
    """Responsibilities: membership, task lifecycle, process loop, numbered commits."""

    def __init__(self, env: ThreadEnv, index: int, *, held: bool = False) -> None:
        self.env = env
        self.index = index
        app_id, instance = env.config.application_id, env.instance_id
        self.name = f"{instance}-thread-{index}"
        self.thread_instance_id = self.name if env.static else None
        self.client_id = f"{app_id}-{instance}-thread-{index}"
        self.state = ThreadState.CREATED
        self.tasks: dict[str, StreamTask] = {}
        self.restoring: set[str] = set()
        self.locked: set[str] = set()
        self.rebalances = 0
        self.error: BaseException | None = None
        self.assignment_info: AssignmentInfo | None = None
        self._records_processed_closed = 0
        self._stop_requested = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._os_thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._state_lock = threading.Lock()
        self._commit_lock: asyncio.Lock | None = None
        self._restorer: ChangelogRestorer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._collector: ProducerCollector | None = None
        self._previous_tasks: tuple[str, ...] = ()
        # exactly_once_v2: <application.id>-<instance>-thread-<n>, stable under static
        # membership, so a restarted incarnation's InitProducerId fences the crashed one.
        self.transactional_id = f"{app_id}-{self.name}" if env.config.exactly_once else None
        self._by_input: dict[KafkaTP, StreamTask] = {}  # kept with self.tasks, not per poll
        # Kafka Streams splits statestore.cache.max.bytes evenly over the stream threads
        cfg = env.config
        self._cache = RecordCache(cfg.statestore_cache_max_bytes // cfg.num_stream_threads)
        self._standbys: StandbyUpdater | None = None
        self._changelog_ends: ChangelogEnds | None = None  # the leader's lag reference
        self._purger: RepartitionPurger | None = None
        self._probe_at_ms: int | None = None  # when the leader asks for a probing rebalance
        # Hand-off (streamrt run --handoff): a held thread starts its clients and finds the
        # group coordinator, then waits for release() before it joins. A stopping thread sets
        # ``committed`` once its final commit is done, before it closes its stores: from then
        # on a successor may join (it fences our member, which commits nothing more) and
        # opens each task as soon as we release its directory lock.
        self._hold = threading.Event()
        if not held:
            self._hold.set()
        self.prepared = threading.Event()  # held: clients up, waiting; or the thread ended
        self.committed = threading.Event()  # stopping: the final commit is done; or it ended
        self.stopped_cleanly = False  # the final commit succeeded (set before ``committed``)
        self._lock_warned: set[str] = set()
        self._wakeup: asyncio.Event | None = None
        self._marked: set[str] = set()

    # -- control from other threads ----------------------------------------------------------

    def start(self) -> None:
        self._transition(ThreadState.STARTING)
        self._os_thread.start()

    def stop(self) -> None:
        """Ask the thread to commit and stop; a waiting poll is woken at once."""
        if not self._stop_requested.is_set():
            self.mark("stop_requested")
        self._stop_requested.set()
        self._wake()

    def release(self) -> None:
        """Let a held thread join its group (the previous process released the state)."""
        self._hold.set()
        self._wake()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until a held thread's clients are up and it waits to join (or it ended)."""
        return self.prepared.wait(timeout)

    def _wake(self) -> None:
        loop, wakeup = self._loop, self._wakeup
        if loop is not None and wakeup is not None and not loop.is_closed():
            # RuntimeError: the loop closed in between, nothing waits any more
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(wakeup.set)

    def mark(self, name: str) -> None:
        """A hand-off timeline mark (``timeline`` event), once per name and thread."""
        if name in self._marked:
            return
        self._marked.add(name)
        logger.info("timeline", extra=fields(thread=self.name, mark=name, t=round(time.time(), 4)))
        self.env.emit("timeline", self.index, mark=name)

    def join(self, timeout: float | None = None) -> None:
        if self._os_thread.is_alive():
            self._os_thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._os_thread.is_alive()

    @property
    def member_id(self) -> str | None:
        """The consumer's member id in the group (assigned by the coordinator), once joined."""
        return kafka_adapter.member_id(self._consumer)

    @property
    def generation(self) -> int | None:
        """The group generation this thread's consumer last joined."""
        return kafka_adapter.generation(self._consumer)

    def owns(self, task_id: str) -> bool:
        """True if the task is assigned to this thread (open, restoring or waiting for a lock)."""
        return task_id in self.tasks

    def running_task(self, task_id: str) -> StreamTask | None:
        """The task if it is open and processing here; call on this thread's loop."""
        if task_id in self.restoring or task_id in self.locked:
            return None
        return self.tasks.get(task_id)

    def run_on_loop(self, fn: Callable[[], Awaitable[T]], timeout: float) -> T:
        """Run ``fn()`` on this thread's event loop under its commit lock, from another thread.

        Under the lock no task is being processed, committed, closed or opened, so ``fn`` sees
        a consistent state. Raises ThreadNotRunningError if the loop is gone or too slow.
        """
        loop, lock = self._loop, self._commit_lock
        if loop is None or lock is None or loop.is_closed():
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
            tasks = [t for tid, t in self.tasks.items() if tid not in self.locked]
            for task in tasks:
                task.state.persist()
            return len(tasks)

        return self.run_on_loop(persist, timeout)

    def metadata(self) -> ThreadMetadata:
        tasks = dict(self.tasks)
        stats = self._restorer.stats if self._restorer else None
        return ThreadMetadata(
            thread_name=self.name,
            thread_index=self.index,
            thread_instance_id=self.thread_instance_id,
            client_id=self.client_id,
            state=self.state,
            active_tasks=tuple(sorted(tasks, key=lambda t: TaskId.parse(t))),
            restoring_tasks=tuple(sorted(self.restoring)),
            topic_partitions=tuple(sorted(tp for t in tasks.values() for tp in t.inputs)),
            rebalances=self.rebalances,
            records_processed=self._records_processed_closed
            + sum(t.records_processed for t in tasks.values()),
            records_restored=stats.records if stats else 0,
            bytes_restored=stats.bytes if stats else 0,
            restore_time_ms=round(stats.seconds * 1000, 3) if stats else 0.0,
            **self._standby_metadata(),
            **task_progress(tasks, self._consumer, self._restorer),
        )

    def _transition(self, new: ThreadState) -> None:
        with self._state_lock:
            old = self.state
            if old is new:
                return
            assert old in ALLOWED_PREVIOUS[new], f"thread {self.name}: {old.name} → {new.name}"
            self.state = new
        logger.info("thread state", extra=fields(thread=self.name, old=old.name, new=new.name))
        self.env.emit("thread_state", self.index, old=old.name, new=new.name)

    # -- the thread's own loop -----------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self.error = exc
            if kafka_adapter.is_fenced(exc):
                self.env.emit("fenced", self.index, thread_instance_id=self.thread_instance_id)
                self.error = FatalThreadError(
                    f"FENCED_INSTANCE_ID: group.instance.id {self.thread_instance_id} is used by "
                    "another process of this application; stopping this instance"
                )
            logger.error(
                "stream thread died",
                exc_info=not isinstance(self.error, FatalThreadError),
                extra=fields(thread=self.name, error=str(self.error)),
            )
        finally:
            if self.state not in (ThreadState.DEAD, ThreadState.PENDING_SHUTDOWN):
                self._transition(ThreadState.PENDING_SHUTDOWN)
            self._transition(ThreadState.DEAD)

    def _assignor(self) -> StreamsPartitionAssignor:
        subs, cfg = self.env.subtopologies, self.env.config
        self._changelog_ends = ChangelogEnds(
            cfg.application_id, {s.id: (s.source_topics, s.stores) for s in subs}
        )
        return StreamsPartitionAssignor(
            {s.id: s.source_topics for s in subs},
            {s.id: s.stores for s in subs},
            self._subscription_info,
            self._on_assignment_info,
            self._on_leader,
            PlacementConfig(
                cfg.num_standby_replicas, cfg.acceptable_recovery_lag, cfg.max_warmup_replicas
            ),
            self._on_placement,
            self._changelog_ends.task_ends,
        )

    def _on_leader(self, members: int, tasks: int) -> None:
        """This thread's consumer is the group leader and just computed the assignment."""
        generation = self.generation
        logger.info(
            "computed the group assignment as leader",
            extra=fields(thread=self.name, generation=generation, members=members, tasks=tasks),
        )
        self.env.emit(
            "group_leader", self.index, generation=generation, members=members, tasks=tasks
        )

    def _subscription_info(self) -> SubscriptionInfo:
        if self._standbys is not None:
            self._standbys.checkpoint()  # report how far the standbys are right now
        return SubscriptionInfo(
            self.env.instance_id,
            self.thread_instance_id or self.client_id,
            self.env.config.application_server,
            self._previous_tasks,
            local_task_offsets(self.env.config.app_state_dir),
            self._standbys.task_ids if self._standbys is not None else (),
        )

    def _on_assignment_info(self, info: AssignmentInfo) -> None:
        self.assignment_info = info

    async def _main(self) -> None:
        cfg = self.env.config
        self._loop = asyncio.get_running_loop()
        self._commit_lock = asyncio.Lock()
        self._wakeup = asyncio.Event()
        if self._stop_requested.is_set():
            return
        clients = cfg.client_config()
        producer = self._new_producer()
        consumer = AIOKafkaConsumer(
            **self._consumer_kwargs(
                client_settings.consumer_kwargs(clients, "main.consumer", self.client_id)
            ),
            group_id=cfg.application_id,
            group_instance_id=self.thread_instance_id,
            session_timeout_ms=cfg.session_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            max_poll_interval_ms=cfg.max_poll_interval_ms,
            rebalance_timeout_ms=max(cfg.session_timeout_ms, 10_000),
            partition_assignment_strategy=(self._assignor(),),
        )
        restore_consumer = AIOKafkaConsumer(
            **self._consumer_kwargs(
                client_settings.consumer_kwargs(
                    clients, "restore.consumer", f"{self.client_id}-restore"
                )
            ),
        )
        self._collector = (
            TransactionalCollector(producer) if cfg.exactly_once else ProducerCollector(producer)
        )
        self._restorer = ChangelogRestorer(
            restore_consumer, self.name, lambda type_, **kv: self.env.emit(type_, self.index, **kv)
        )
        self._consumer = consumer
        self._standbys = self._standby_updater(restore_consumer)
        # Under EOS the producer starts first: its InitProducerId fences a crashed incarnation
        # and aborts its open transaction, which releases the changelogs' last stable offset
        # before the restore consumer asks for their ends. A held thread (hand-off successor)
        # under EOS starts it only once released: the running process still uses that
        # transactional id, and our InitProducerId would fence it.
        eos = cfg.exactly_once
        if not eos:
            await producer.start()
        await restore_consumer.start()
        self._purger = self._repartition_purger()
        try:
            # Everything before the join: connect, load metadata, find the group coordinator.
            await consumer.start()
            kafka_adapter.install_static_heartbeat(consumer)
            await kafka_adapter.find_coordinator(consumer)
            if not self._hold.is_set():
                await self._warm_restore_consumer(restore_consumer)
            self.mark("prepared")
            self.prepared.set()
            await self._wait_until(lambda: self._hold.is_set() or self._stop_requested.is_set())
            if self._stop_requested.is_set():
                return
            self.mark("released")
            if eos:
                await producer.start()
            topics = list(dict.fromkeys(t for s in self.env.subtopologies for t in s.source_topics))
            consumer.subscribe(topics, listener=_Listener(self))
            self.mark("join_requested")
            await self._run_loop(consumer)
            self.mark("stop_noticed")
            self._transition(ThreadState.PENDING_SHUTDOWN)
            async with self._commit_lock:
                await self._commit(consumer)
            self.mark("committed")
            self.stopped_cleanly = True
        finally:
            self.prepared.set()
            self.committed.set()
            await self._close_tasks(list(self.tasks))
            self._close_standbys()
            self.mark("stores_closed")
            await self._close_clients(
                consumer, restore_consumer, started=not eos or self._hold.is_set()
            )
            self.mark("clients_closed")

    async def _close_clients(
        self, consumer: AIOKafkaConsumer, restore_consumer: AIOKafkaConsumer, started: bool
    ) -> None:
        """Close the clients. A static member sends no LeaveGroup on stop: aiokafka skips it
        when group_instance_id is set, so the coordinator keeps our partitions for us. After a
        hand-off the successor may already have fenced our member: that is not an error now."""
        try:
            await consumer.stop()
        except Exception as exc:
            if not (self._stop_requested.is_set() and kafka_adapter.is_fenced(exc)):
                raise
            logger.info(
                "consumer fenced by the successor while closing", extra=fields(thread=self.name)
            )
        await restore_consumer.stop()
        if self._collector is not None and started:
            await self._collector.producer.stop()
        if self._purger is not None:
            await self._purger.close()

    async def _warm_restore_consumer(self, restore_consumer: AIOKafkaConsumer) -> None:
        """Held: ask the changelogs' end offsets once, so the metadata and the connections
        the restore check needs after the join are there already (best effort)."""
        app_id = self.env.config.application_id
        stores = {name for sub in self.env.subtopologies for name in sub.stores}
        tps = [KafkaTP(changelog_topic(app_id, name), 0) for name in sorted(stores)]
        if not tps:
            return
        try:
            await asyncio.wait_for(restore_consumer.end_offsets(tps), 5.0)
        except Exception as exc:  # e.g. a store whose changelog is its source topic
            logger.debug("restore consumer warm-up", extra=fields(error=repr(exc)))

    async def _wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait for a flag another thread sets (it wakes us; the timeout covers a race)."""
        assert self._wakeup is not None
        while not condition():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), 0.05)
            self._wakeup.clear()

    def _repartition_purger(self) -> RepartitionPurger | None:
        """Deletes consumed repartition records after commits (None: no repartition topic)."""
        cfg = self.env.config
        topics = self.env.topology.repartition_topics(cfg.application_id)
        if not topics:
            return None
        kwargs = client_settings.admin_kwargs(cfg.client_config(), f"{self.client_id}-purge")
        return RepartitionPurger(
            topics,
            lambda: AIOKafkaAdminClient(**kwargs),
            self.env.clock,
            cfg.repartition_purge_interval_ms,
        )

    def _new_producer(self) -> AIOKafkaProducer:
        """The thread's producer; transactional (one per thread) under exactly_once_v2."""
        txn: dict[str, Any] = {}
        if self.transactional_id is not None:
            txn = {
                "transactional_id": self.transactional_id,
                "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
            }
        clients = self.env.config.client_config()
        producer = AIOKafkaProducer(
            **client_settings.producer_kwargs(clients, f"{self.client_id}-producer"), **txn
        )
        if self.transactional_id is not None:
            kafka_adapter.install_group_metadata_offsets(
                producer, lambda: kafka_adapter.group_metadata(self._consumer)
            )
        return producer

    def _consumer_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Under exactly_once_v2 every consumer reads committed data only (Kafka Streams too)."""
        if self.transactional_id is not None:
            kwargs["isolation_level"] = "read_committed"
        return kwargs

    async def _run_loop(self, consumer: AIOKafkaConsumer) -> None:
        """The process loop; under EOS a lost transaction closes the tasks dirty and the loop
        goes on with a fresh producer (Kafka Streams' TaskMigrated/TaskCorrupted handling)."""
        while True:
            try:
                await self._loop_until_stopped(consumer)
                return
            except (kafka_errors.KafkaError, kafka_errors.IllegalOperation) as exc:
                # IllegalOperation: a send into a transaction the producer no longer has (a
                # newer incarnation's InitProducerId fenced it between two sends); aiokafka
                # raises it instead of ProducerFenced, and it is just as lost.
                if self.transactional_id is None or kafka_adapter.is_fenced(exc):
                    raise
                await self._recover_lost_transaction(consumer, exc)

    async def _loop_until_stopped(self, consumer: AIOKafkaConsumer) -> None:
        assert self._commit_lock is not None and self._restorer is not None
        clock = self.env.clock
        schedule = CommitSchedule(clock, self.env.config.commit_interval_ms)
        while not self._stop_requested.is_set():
            # While stores restore, do not block on the (paused) inputs: restoring is the work.
            # A task waiting for a lock (a previous owner still closing it) retries every 10 ms.
            timeout_ms = 0 if self.restoring else 10 if self.locked else 100
            batches = await self._poll(consumer, timeout_ms)
            # getmany returns already fetched records without yielding to the event loop; yield
            # once per poll so the producer's sender (linger) and the fetcher run in between.
            await asyncio.sleep(0)
            async with self._commit_lock:
                await self._retry_locked()
                for task_id in await self._restorer.step():
                    self._ready(self.tasks[task_id])
                await self._step_standbys()
                self._process(batches)
                now_ms = clock.now_ms()
                for task_id, task in self.tasks.items():
                    if task_id not in self.restoring:
                        task.punctuate(now_ms)
                assert self._collector is not None
                await self._collector.drain()
                if schedule.due():
                    await self._commit(consumer)
                    schedule.committed()
                self._maybe_probe(consumer)

    async def _poll(self, consumer: AIOKafkaConsumer, timeout_ms: int) -> dict[KafkaTP, list[Any]]:
        """``getmany``, but a stop request ends the wait at once instead of after the timeout.

        Buffered records are taken without waiting; only an empty poll waits, racing the wake-up.
        A cancelled ``getmany`` has drained nothing (it is cancelled at its wait), so no
        record is lost: they stay in the fetcher's buffer.
        """
        batches = await consumer.getmany(timeout_ms=0)
        if batches or timeout_ms == 0:
            if batches and "first_fetch" not in self._marked:
                self.mark("first_fetch")
            return batches
        wakeup = self._wakeup
        assert wakeup is not None
        if self._stop_requested.is_set():
            return {}
        wakeup.clear()
        poll = asyncio.ensure_future(consumer.getmany(timeout_ms=timeout_ms))
        woken = asyncio.ensure_future(wakeup.wait())
        await asyncio.wait((poll, woken), return_when=asyncio.FIRST_COMPLETED)
        woken.cancel()
        if not poll.done():
            poll.cancel()
            await asyncio.wait((poll,))  # let it unwind (ours is not cancelled by this)
            return {}
        batches = poll.result()
        if batches and "first_fetch" not in self._marked:
            self.mark("first_fetch")
        return batches

    def _process(self, batches: dict[KafkaTP, list[Any]]) -> None:
        by_input = self._by_input
        for ktp, records in batches.items():
            task = by_input.get(ktp)
            if task is None or str(task.task_id) in self.restoring:
                self._unread(ktp, records)
                continue
            for r in records:  # a RecordFailedError (handler said FAIL) ends the thread
                task.process(r.topic, r.offset, r.timestamp, r.key, r.value, r.headers)
            if records and "first_record" not in self._marked:
                self.mark("first_record")

    def _unread(self, ktp: KafkaTP, records: list[Any]) -> None:
        """Put records no task can take back on the consumer. A partition is fetchable from
        the moment aiokafka assigns it, before ``on_assigned`` (which waits for the commit lock)
        has created and paused its task: the getmany in between returned those records and,
        dropped, they were skipped for good (the rolling-deploy state-size sweep lost 49
        clicks that way). Seeking back re-reads them once the task is ready."""
        assert self._consumer is not None
        if records and ktp in self._consumer.assignment():
            self._consumer.seek(ktp, records[0].offset)

    async def _commit(self, consumer: AIOKafkaConsumer) -> None:
        """Commit at-least-once (the numbered order lives in :func:`runtime.commit.commit`)."""
        assert self._collector is not None
        if isinstance(self._collector, TransactionalCollector):
            await self._commit_transaction()
            return
        open_tasks = [t for tid, t in self.tasks.items() if tid not in self.locked]
        offsets = await commit(self._collector, open_tasks, _ConsumerCommitter(consumer))
        self._checkpoint_standbys()
        if self._purger is not None:
            self._purger.after_commit(offsets.items())
        if offsets:
            self.env.emit(
                "commit",
                self.index,
                offsets={f"{tp.topic}-{tp.partition}": off for tp, off in offsets.items()},
            )

    # -- exactly-once (the order lives in runtime.eos) ---------------------------------------

    async def _commit_transaction(self) -> None:
        """Commit the thread's transaction; on failure abort it and discard staged writes."""
        collector = self._collector
        assert isinstance(collector, TransactionalCollector)
        open_tasks = [t for tid, t in self.tasks.items() if tid not in self.locked]
        try:
            offsets = await commit_transaction(
                collector, open_tasks, self.env.config.application_id
            )
        except BaseException as exc:
            await abort_transaction(collector, open_tasks)
            self.env.emit("transaction_aborted", self.index, error=repr(exc))
            raise
        if self._purger is not None:
            self._purger.after_commit(offsets.items())
        if offsets:
            self.env.emit(
                "commit",
                self.index,
                offsets={f"{tp.topic}-{tp.partition}": off for tp, off in offsets.items()},
            )

    async def _recover_lost_transaction(
        self, consumer: AIOKafkaConsumer, exc: BaseException
    ) -> None:
        """The transaction is lost: close every task dirty (staged writes discarded), re-create
        a fenced producer, reopen the tasks and rewind the input to the committed offsets.

        A static member first checks it is still the current incarnation: if another process
        took its instance id, re-creating the producer would fence that process, so this one
        stops instead (FENCED_INSTANCE_ID, fatal as for a heartbeat).
        """
        assert self._commit_lock is not None
        collector = self._collector
        assert isinstance(collector, TransactionalCollector)
        logger.warning(
            "transaction lost, closing tasks dirty",
            extra=fields(thread=self.name, error=repr(exc)),
        )
        async with self._commit_lock:
            task_ids = sorted(self.tasks)
            aborted = await abort_transaction(collector, list(self.tasks.values()))
            await self._close_tasks(task_ids)
            if not aborted or kafka_adapter.is_producer_fenced(exc):
                await kafka_adapter.check_static_membership(consumer)
                try:
                    await collector.producer.stop()
                except Exception as stop_exc:
                    logger.warning(
                        "fenced producer did not stop cleanly",
                        extra=fields(thread=self.name, error=repr(stop_exc)),
                    )
                producer = self._new_producer()
                await producer.start()
                collector.reset(producer)
            for task_id in task_ids:
                self._create(TaskId.parse(task_id))
            await self._retry_locked()
            for ktp in consumer.assignment():
                committed = await consumer.committed(ktp)
                if committed is None:
                    await consumer.seek_to_beginning(ktp)
                else:
                    consumer.seek(ktp, committed)
        self.env.emit("tasks_lost", self.index, tasks=task_ids, error=repr(exc))

    # -- rebalance callbacks (run on this thread's loop) ---------------------------------------

    async def on_revoked(self, revoked: list[TopicPartition]) -> None:
        assert self._commit_lock is not None and self._consumer is not None
        self.rebalances += 1
        revoked_set = set(revoked)
        gone = [tid for tid, t in self.tasks.items() if revoked_set & set(t.inputs)]
        logger.info(
            "partitions revoked",
            extra=fields(thread=self.name, partitions=sorted(revoked), tasks=gone),
        )
        self.env.emit("rebalance_started", self.index, generation=self.generation)
        self.env.emit("revocation", self.index, partitions=sorted(revoked), tasks=gone)
        async with self._commit_lock:
            try:
                await self._commit(self._consumer)
            except Exception as exc:  # the group moved on: uncommitted input is re-read
                logger.warning(
                    "commit on revocation failed", extra=fields(thread=self.name, error=repr(exc))
                )
            await self._close_tasks(gone)
        await self._refresh_changelog_ends()

    async def _refresh_changelog_ends(self) -> None:
        """Before joining: list the changelog ends, in case this thread leads the assignment."""
        ends, standbys, consumer = self._changelog_ends, self._standbys, self._consumer
        if ends is None or not ends.stateful or standbys is None or consumer is None:
            return
        await ends.refresh(standbys.consumer, consumer.partitions_for_topic)

    async def on_assigned(self, assigned: list[TopicPartition]) -> None:
        assert self._commit_lock is not None and self._restorer is not None
        if self.state in (ThreadState.PENDING_SHUTDOWN, ThreadState.DEAD):
            return  # a join that completed while stopping: no tasks to start
        info = self.assignment_info
        wanted = set(info.tasks) if info else set()
        self._transition(ThreadState.PARTITIONS_ASSIGNED)
        self.mark("assigned")
        logger.info(
            "partitions assigned",
            extra=fields(thread=self.name, partitions=sorted(assigned), tasks=sorted(wanted)),
        )
        self.env.emit("rebalance_complete", self.index, generation=self.generation)
        self.env.emit("assignment", self.index, partitions=sorted(assigned), tasks=sorted(wanted))
        async with self._commit_lock:
            await self._close_tasks([t for t in self.tasks if t not in wanted])
            await self._assign_standbys(info.standby_tasks if info else ())
            for task_id in sorted(wanted - set(self.tasks)):
                self._create(TaskId.parse(task_id))
            await self._retry_locked()
            self._previous_tasks = tuple(sorted(wanted))
            if not self.restoring and not self.locked:
                self.mark("ready")
                self._transition(ThreadState.RUNNING)

    def _create(self, task_id: TaskId) -> None:
        assert self._collector is not None
        sub = self.env.subtopologies[task_id.subtopology]
        task = StreamTask(
            task_id,
            sub,
            self.env.topology,
            self.env.config.application_id,
            Path(self.env.config.state_dir),
            self._collector,
            default_store=self.env.config.default_dsl_store,
            errors=self.env.errors,
            cache=self._cache,
            timestamp_extractor=self.env.config.timestamp_extractor(),
            clock=self.env.clock,
        )
        self.tasks[str(task_id)] = task
        self._by_input.update((KafkaTP(*tp), task) for tp in task.inputs)
        self.locked.add(str(task_id))
        self._pause(task)

    async def _retry_locked(self) -> None:
        """Open tasks whose directory lock is free (another thread may still be closing it)."""
        assert self._restorer is not None
        for task_id in sorted(self.locked):
            task = self.tasks[task_id]
            try:
                task.open()
            except StateLockedError as exc:
                if task_id not in self._lock_warned:  # retried every 10 ms: say it once
                    self._lock_warned.add(task_id)
                    logger.warning(
                        "task state is locked, will retry",
                        extra=fields(thread=self.name, task=task_id, error=str(exc)),
                    )
                continue
            self._lock_warned.discard(task_id)
            self.locked.discard(task_id)
            self.restoring.add(task_id)
            if not self.locked:
                self.mark("stores_opened")
            self.env.emit("restore_check", self.index, task=task_id)
            if await self._restorer.add(task.state):
                self._ready(task)

    def _ready(self, task: StreamTask) -> None:
        task_id = str(task.task_id)
        self.restoring.discard(task_id)
        assert self._consumer is not None
        self._consumer.resume(*[KafkaTP(*tp) for tp in task.inputs])
        self.env.emit("restore_ready", self.index, task=task_id)
        if not self.restoring and not self.locked and self.state is ThreadState.PARTITIONS_ASSIGNED:
            self.mark("ready")
            self._transition(ThreadState.RUNNING)

    def _pause(self, task: StreamTask) -> None:
        assert self._consumer is not None
        assigned = self._consumer.assignment()
        self._consumer.pause(*[KafkaTP(*tp) for tp in task.inputs if KafkaTP(*tp) in assigned])

    async def _close_tasks(self, task_ids: list[str]) -> None:
        for task_id in task_ids:
            task = self.tasks.pop(task_id, None)
            if task is None:
                continue
            for tp in task.inputs:
                self._by_input.pop(KafkaTP(*tp), None)
            if self._restorer is not None:
                await self._restorer.remove(task_id)
            self.restoring.discard(task_id)
            self.locked.discard(task_id)
            self._records_processed_closed += task.records_processed
            task.close()

    # -- standby tasks and probing rebalances (issue 14) ---------------------------------------

    def _standby_updater(self, restore_consumer: AIOKafkaConsumer) -> StandbyUpdater:
        """The thread's standbys share the restore consumer; they pause while actives restore."""
        cfg = self.env.config

        def make(task_id: str) -> StandbyTask:
            return StandbyTask(
                task_id,
                self.env.subtopologies[TaskId.parse(task_id).subtopology],
                self.env.topology,
                cfg.application_id,
                Path(cfg.state_dir),
                default_store=cfg.default_dsl_store,
            )

        return StandbyUpdater(
            restore_consumer,
            make,
            lambda: bool(self._restorer and self._restorer.restoring),
            self.name,
            lambda type_, **kv: self.env.emit(type_, self.index, **kv),
        )

    async def _assign_standbys(self, wanted: tuple[str, ...]) -> None:
        """On assignment, before actives open: close standbys no longer wanted (or now active
        here, whose directory the active needs) and open the new ones."""
        if self._standbys is not None:
            await self._standbys.update(t for t in wanted if t not in self.tasks)

    async def _step_standbys(self) -> None:
        """Between process batches: apply what the restore consumer fetched for standbys."""
        if self._standbys is not None:
            await self._standbys.step()

    def _checkpoint_standbys(self) -> None:
        """On commit: standbys refresh their checkpoint hints (the subscription reads them)."""
        if self._standbys is not None:
            self._standbys.checkpoint()

    def _close_standbys(self) -> None:
        if self._standbys is not None:
            self._standbys.close_all()

    def _standby_metadata(self) -> dict[str, Any]:
        if self._standbys is None:
            return {}
        return {
            "standby_tasks": self._standbys.task_ids,
            "standby_lags": self._standbys.lags(),
            "standby_records_applied": self._standbys.records_applied,
        }

    def _on_placement(self, plan: TaskPlacement) -> None:
        """As the group leader: warm-ups mean a probing rebalance is due later (KIP-441)."""
        if not plan.probing_rebalance_needed:
            self._probe_at_ms = None
            return
        due = self.env.clock.now_ms() + self.env.config.probing_rebalance_interval_ms
        self._probe_at_ms = due
        self.env.emit(
            "probing_rebalance_scheduled",
            self.index,
            warmups=plan.warmup_count,
            moved=plan.moved,
            due_ms=due,
        )

    def _maybe_probe(self, consumer: AIOKafkaConsumer) -> None:
        """Trigger the scheduled probing rebalance: the leader rejoins, which always rebalances
        a stable group; members then report their warm-ups' offsets."""
        if self._probe_at_ms is None or self.env.clock.now_ms() < self._probe_at_ms:
            return
        self._probe_at_ms = None
        logger.info("probing rebalance", extra=fields(thread=self.name))
        self.env.emit("probing_rebalance", self.index, generation=self.generation)
        kafka_adapter.request_rejoin(consumer)


def local_task_offsets(app_state_dir: Path) -> dict[str, int]:
    """Task ids with state on disk → the sum of their stores' checkpointed changelog offsets.

    Read from each task's checkpoint hint file, so no RocksDB (and no task lock) is opened. A
    task directory with stores but no hint yet counts as 0: it has state, nothing checkpointed.
    """
    out: dict[str, int] = {}
    if not app_state_dir.is_dir():
        return out
    for child in app_state_dir.iterdir():
        try:
            TaskId.parse(child.name)
        except ValueError:
            continue
        if any(p.is_dir() for p in child.iterdir()):
            out[child.name] = sum(read_checkpoint_hint(child).values())
    return out
