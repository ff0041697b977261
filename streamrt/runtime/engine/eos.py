"""Exactly-once v2 (KIP-447): one transaction per commit, and stores flushed only after it.

Under ``processing.guarantee=exactly_once_v2`` each stream thread has one transactional
producer. A transaction begins with the first record sent after a commit; output records,
changelog records and the input offsets of every task of the thread go into it. The commit, in
order, and why:

0. flush each task's record cache (its updates become this transaction's sends);
1. flush the producer: every output and changelog record of the transaction is delivered;
2. ``send_offsets_to_transaction`` (TxnOffsetCommit v3 with the group member's generation,
   member id and ``group.instance.id``, through
   :func:`~streamrt.runtime.engine.clients.rdkafka_txn.group_metadata_bytes`), then
   ``commit_transaction``;
3. only now each task's StateManager writes its staged data with the changelog offset reached
   (one WriteBatch per store) and the checkpoint hint.

A failure before 3 leaves the stores as they were at the previous commit (their staged writes
are discarded with :meth:`StreamTask.discard_uncommitted`; a task's record cache entries go with
its dirty close, which always follows an abort), and the aborted changelog records are
skipped by the ``read_committed`` restore consumer: the durable state of a store never runs
ahead of the committed transactions, so a crash needs no wipe, only the changelog tail.

The changelog offset recorded is the position *after* the commit marker. The coordinator writes
the marker of a changelog partition after the transaction's last record there, and only this
thread's producer writes that partition, so the marker sits at ``last + 1`` and the next
committed record at ``last + 2`` (should anything else sit in between, e.g. a fenced zombie's
aborted batch, ``last + 2`` is still at or before the marker's end: the restore just reads it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from streamrt.runtime.engine.collector import Collector
from streamrt.topic_partition import TopicPartition

__all__ = (
    "TRANSACTION_TIMEOUT_MS",
    "TransactionLostError",
    "TransactionalSink",
    "abort_transaction",
    "commit_transaction",
)

logger = logging.getLogger(__name__)

#: Kafka Streams' producer override under EOS: a crashed thread's open transaction is
#: aborted by the broker after this long if no new incarnation fences it first.
TRANSACTION_TIMEOUT_MS = 10_000


class TransactionLostError(Exception):
    """The open transaction cannot commit (an abortable or fatal producer error that is not a
    Kafka client's own exception type): the committer recovers it as any lost transaction."""


class TransactionalSink(Collector, Protocol):
    """What :func:`commit_transaction` and :func:`abort_transaction` need from a thread's
    transactional collector
    (:class:`~streamrt.runtime.engine.clients.rdkafka_txn.LibrdkafkaTransactionalCollector`)."""

    in_transaction: bool

    async def begin(self) -> None:
        """Begin a transaction unless one is open."""
        ...

    async def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        """Add the input offsets to the open transaction (TxnOffsetCommit v3)."""
        ...

    async def commit(self) -> None:
        """Commit the open transaction; the next send begins another."""
        ...

    async def abort(self) -> None:
        """Abort the open transaction; raises if the producer cannot (fenced, fatal)."""
        ...

    def reset(self, producer: Any = None) -> None:
        """Forget the lost transaction's records; with ``producer``: use that one from now."""
        ...


class TransactionalTask(Protocol):
    """A task under exactly-once: its stores' data and offsets are written at once, after
    the transaction committed."""

    def flush_cache(self) -> None: ...

    def flush_state(self, delivered: dict[TopicPartition, int]) -> None: ...

    def take_offsets(self) -> dict[TopicPartition, int]: ...


class DiscardingTask(TransactionalTask, Protocol):
    def discard_uncommitted(self) -> None: ...


async def commit_transaction(
    collector: TransactionalSink, tasks: Iterable[TransactionalTask], group_id: str
) -> dict[TopicPartition, int]:
    """Steps 1-3 above; returns the input offsets committed (empty: nothing to commit).

    Raises whatever the producer raises; the caller then aborts (or re-creates a fenced
    producer) and discards the tasks' staged writes.
    """
    tasks = list(tasks)
    for task in tasks:
        task.flush_cache()  # 0: cached updates become sends of this transaction
    offsets: dict[TopicPartition, int] = {}
    for task in tasks:
        offsets.update(task.take_offsets())
    delivered = dict(await collector.flush())  # 1
    if not offsets and not collector.in_transaction:
        return {}
    await collector.begin()  # input consumed without output still commits its offsets
    if offsets:
        await collector.send_offsets(offsets, group_id)  # 2
    await collector.commit()
    after_marker = {tp: end + 1 for tp, end in delivered.items()}
    for task in tasks:
        task.flush_state(after_marker)  # 3
    return offsets


async def abort_transaction(collector: TransactionalSink, tasks: Iterable[DiscardingTask]) -> bool:
    """Abort the open transaction and discard every task's staged writes.

    With no transaction open the collector is reset all the same: records sent since the
    last commit wait there for the drain that begins the next transaction (Kafka's producer
    would have begun it at the first send, and its abort drops them), and kept they would
    be committed with the next transaction while their input is read again.

    Returns False if the producer could not abort (fenced or fatal): it must be re-created,
    and its new InitProducerId aborts the open transaction on the broker.
    """
    for task in tasks:
        task.discard_uncommitted()
    if not collector.in_transaction:
        collector.reset()
        return True
    try:
        await collector.abort()
    except Exception as exc:
        logger.warning("transaction abort failed, the producer is re-created", exc_info=exc)
        return False
    collector.reset()
    return True
