"""One committer per processing guarantee, behind one interface (:class:`Committer`).

``at_least_once``: :func:`~streamrt.runtime.engine.commit.commit.commit` (flush, stores, offsets by
the thread's group member). ``exactly_once_v2``: one transaction per commit
(:mod:`~streamrt.runtime.engine.eos`), an abort when it fails, and the recovery of a lost
transaction (Kafka Streams' TaskMigrated/TaskCorrupted handling). What follows every commit,
whatever the guarantee (repartition purge, the ``commit`` event), is written once, here.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from streamrt.admin.connection import AdminConnectionError
from streamrt.logs import fields
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.clients import Producer, ThreadClients
from streamrt.runtime.engine.clients.purge import RepartitionPurger
from streamrt.runtime.engine.clients.rdkafka_producer import LibrdkafkaCollector
from streamrt.runtime.engine.clients.rdkafka_txn import (
    LibrdkafkaTransactionalCollector,
    TransactionalLibrdkafkaProducer,
    is_fenced,
)
from streamrt.runtime.engine.collector import Collector
from streamrt.runtime.engine.commit.commit import commit
from streamrt.runtime.engine.env import Emit
from streamrt.runtime.engine.eos import (
    TransactionalSink,
    abort_transaction,
    commit_transaction,
)
from streamrt.runtime.engine.main_consumer import MainConsumer
from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.runtime.engine.tasks.task_manager import TaskManager
from streamrt.topic_partition import TopicPartition

__all__ = (
    "AtLeastOnceCommitter",
    "Committer",
    "ExactlyOnceCommitter",
    "GroupOffsets",
    "committer_for",
)

logger = logging.getLogger(__name__)

#: how long a lost transaction's recovery waits for the broker to be reachable again (Kafka's
#: max.block.ms default, as the replacement's init_transactions); then the thread fails
REACHABLE_TIMEOUT_S = 60.0
#: how often it asks meanwhile (librdkafka's and Kafka's retry.backoff.ms default)
REACHABLE_RETRY_S = 0.1


class GroupOffsets(Protocol):
    """The group's side of a commit: streamrt's own member commits and reads offsets with its
    identity (:class:`~streamrt.runtime.engine.rebalance.own_membership.StreamrtMembership`)."""

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None: ...

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Committed offsets of ``partitions``; those with none are left out."""
        ...

    async def check_membership(self) -> None:
        """Raise if another process took this static member's ``group.instance.id``."""
        ...

    async def check_generation(self) -> None:
        """Raise :class:`TaskMigratedError` if the group dropped this member."""
        ...


class Committer(abc.ABC):
    """Commits a thread's open tasks; subclasses do it under one processing guarantee."""

    def __init__(
        self,
        collector: Collector,
        consumer: MainConsumer,
        purger: RepartitionPurger | None,
        emit: Emit,
        *,
        offsets: GroupOffsets,
    ) -> None:
        self.collector = collector  # the tasks send through it
        self.consumer = consumer
        self.offsets = offsets
        self.purger = purger
        self.emit = emit

    async def commit(
        self, tasks: TaskManager, only: Collection[str] | None = None
    ) -> dict[TopicPartition, int]:
        """Commit the open tasks (``only``: just these, where the guarantee allows it); then
        purge consumed repartition records and report the offsets (empty: nothing to commit).
        Call under the thread's commit lock."""
        offsets = await self._commit(tasks, only)
        if self.purger is not None:
            self.purger.after_commit(offsets.items())
        if offsets:
            self.emit(
                "commit",
                offsets={f"{tp.topic}-{tp.partition}": off for tp, off in offsets.items()},
            )
        return offsets

    @abc.abstractmethod
    async def _commit(
        self, tasks: TaskManager, only: Collection[str] | None
    ) -> dict[TopicPartition, int]:
        """The guarantee's own commit: offsets, transaction, or both."""

    async def lose(self, tasks: TaskManager, task_ids: Collection[str]) -> None:
        """The partitions of ``task_ids`` already belong to another member: close them dirty,
        nothing committed (Kafka Streams' handleLostAll); their staged writes are dropped."""
        for task in tasks.open_tasks():
            if str(task.task_id) in task_ids:
                task.discard_uncommitted()
        await tasks.close(task_ids)

    async def close(self, producer_started: bool) -> None:
        """Stop the producer (if it was started) and the purger's admin client."""
        if producer_started:
            await self.collector.producer.stop()
        if self.purger is not None:
            await self.purger.close()

    def recovers(self, exc: BaseException) -> bool:
        """True if the thread goes on after ``exc`` once :meth:`recover` ran."""
        return False

    async def recover(self, exc: BaseException, tasks: TaskManager) -> None:
        """Repair what ``exc`` broke (call under the thread's commit lock)."""
        raise exc


class AtLeastOnceCommitter(Committer):
    """The numbered commit of :mod:`~streamrt.runtime.engine.commit.commit`; then the standbys
    refresh their checkpoint hints (the subscription reads them)."""

    async def _commit(
        self, tasks: TaskManager, only: Collection[str] | None
    ) -> dict[TopicPartition, int]:
        chosen: list[StreamTask] = []
        others: list[StreamTask] = []
        for task in tasks.open_tasks():
            (chosen if only is None or str(task.task_id) in only else others).append(task)
        offsets = await commit(self.collector, chosen, self.offsets, others)
        tasks.standbys.checkpoint()
        return offsets


class ExactlyOnceCommitter(Committer):
    """exactly_once_v2: one transaction per commit; a lost one closes the tasks dirty."""

    collector: TransactionalSink

    def __init__(
        self,
        collector: TransactionalSink,
        consumer: MainConsumer,
        purger: RepartitionPurger | None,
        emit: Emit,
        group_id: str,
        new_producer: Callable[[], Any],
        thread_name: str,
        *,
        offsets: GroupOffsets,
    ) -> None:
        super().__init__(collector, consumer, purger, emit, offsets=offsets)
        self._group_id = group_id
        self._new_producer = new_producer
        self._thread_name = thread_name

    async def _commit(
        self, tasks: TaskManager, only: Collection[str] | None
    ) -> dict[TopicPartition, int]:
        """Commit the transaction; on failure abort it and discard the staged writes. One
        transaction holds every task's output, so ``only`` is ignored: all are committed."""
        open_tasks = tasks.open_tasks()
        try:
            return await commit_transaction(self.collector, open_tasks, self._group_id)
        except BaseException as exc:
            await abort_transaction(self.collector, open_tasks)
            self.emit("transaction_aborted", error=repr(exc))
            raise

    def recovers(self, exc: BaseException) -> bool:
        """A lost transaction is recovered; a fenced static member (another process took its
        ``group.instance.id``) is not: that stops the instance."""
        return not is_fenced(exc)

    async def recover(self, exc: BaseException, tasks: TaskManager) -> None:
        """The transaction is lost: close every task dirty (staged writes discarded), re-create
        the producer, reopen the tasks and rewind the input to the committed offsets; or, if
        the group dropped this member, raise :class:`TaskMigratedError` instead of reopening.

        A static member first checks it is still the current incarnation: if another process
        took its instance id, re-creating the producer would fence that process, so this one
        stops instead (FENCED_INSTANCE_ID, fatal as for a heartbeat).
        """
        logger.warning(
            "transaction lost, closing tasks dirty",
            extra=fields(thread=self._thread_name, error=repr(exc)),
        )
        task_ids = sorted(tasks.tasks)
        await abort_transaction(self.collector, list(tasks.tasks.values()))
        await tasks.close(task_ids)
        # Always a new producer, fenced or not: a new InitProducerId aborts whatever the lost
        # transaction left open on the broker, so the next commit cannot carry the lost
        # records along with their reprocessing.
        await self._check_membership_once_reachable()
        await self._renew_producer()
        self.emit("tasks_lost", tasks=task_ids, error=repr(exc))
        # dropped by the group (e.g. a TxnOffsetCommit of a stale generation): the tasks stay
        # closed and TaskMigratedError has the thread rejoin; else they reopen here
        await self.offsets.check_generation()
        await tasks.reopen(task_ids)
        await self._rewind()

    async def _check_membership_once_reachable(self) -> None:
        """The membership check, asked again while the broker cannot be reached: a transaction
        whose broker connection dropped is given up at once, often while the broker is still
        down (:mod:`~streamrt.runtime.engine.clients.rdkafka_txn`); the rest of the recovery (a new
        producer, the tasks' restore, the rewind) then starts as soon as the broker is back
        instead of failing the thread."""
        deadline = time.monotonic() + REACHABLE_TIMEOUT_S
        while True:
            try:
                await self.offsets.check_membership()
                return
            except (AdminConnectionError, TimeoutError, OSError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(REACHABLE_RETRY_S)

    async def _renew_producer(self) -> None:
        """A fenced producer is unusable: a new one's InitProducerId aborts the open
        transaction on the broker."""
        try:
            await self.collector.producer.stop()
        except Exception as stop_exc:
            logger.warning(
                "fenced producer did not stop cleanly",
                extra=fields(thread=self._thread_name, error=repr(stop_exc)),
            )
        producer = self._new_producer()
        await producer.start()
        self.collector.reset(producer)

    async def lose(self, tasks: TaskManager, task_ids: Collection[str]) -> None:
        """Lost partitions: the open transaction (every task's output) is aborted first."""
        await abort_transaction(self.collector, list(tasks.tasks.values()))
        await super().lose(tasks, task_ids)

    async def _rewind(self) -> None:
        """Read the input again from the committed offsets (the lost transaction's are gone)."""
        consumer = self.consumer
        assigned = list(consumer.assignment())
        committed = await self.offsets.committed(assigned)
        for ktp in assigned:
            offset = committed.get(ktp)
            if offset is None:
                await consumer.seek_to_beginning(ktp)
            else:
                consumer.seek(ktp, offset)


def committer_for(
    config: StreamsConfig,
    clients: ThreadClients,
    emit: Emit,
    new_producer: Callable[[], Producer],
    thread_name: str,
    offsets: GroupOffsets,
) -> Committer:
    """The committer of ``processing.guarantee``, over the collector of the thread's producer;
    ``offsets``: the group's side (the thread's member); ``new_producer`` makes another
    producer of the same kind (a lost transaction renews it)."""
    producer = clients.producer
    if config.exactly_once:
        if not isinstance(producer, TransactionalLibrdkafkaProducer):  # ClientFactory's choice
            raise TypeError(f"exactly_once_v2 needs a transactional producer, not {producer!r}")
        return ExactlyOnceCommitter(
            LibrdkafkaTransactionalCollector(producer),
            clients.consumer,
            clients.purger,
            emit,
            config.application_id,
            new_producer,
            thread_name,
            offsets=offsets,
        )
    collector = LibrdkafkaCollector(producer)
    return AtLeastOnceCommitter(collector, clients.consumer, clients.purger, emit, offsets=offsets)
