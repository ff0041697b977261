"""Purge consumed repartition records after a commit, as Kafka Streams does.

Kafka Streams owns its repartition topics: once a task has committed its input offset on one,
the records before it will never be read again, so ``TaskManager.maybePurgeCommittedRecords``
deletes them with DeleteRecords. Without it repartition topics grow forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping

from streamrt.admin.client import AdminClient
from streamrt.clock import Clock
from streamrt.topic_partition import TopicPartition

__all__ = ("RepartitionPurger", "purge_repartition_records")

logger = logging.getLogger(__name__)


async def purge_repartition_records(
    admin: AdminClient,
    committed: Mapping[TopicPartition, int],
    *,
    timeout_ms: int = 30_000,
) -> dict[TopicPartition, int]:
    """DeleteRecords up to each committed offset; returns each partition's new log start offset.

    ``committed`` holds only repartition-topic partitions with the offset just committed (the
    next record to read). Partitions with a negative offset are skipped. A failed purge is
    logged and not raised: purging is housekeeping and retried after the next commit, as in
    Kafka Streams.
    """
    wanted = {(tp.topic, tp.partition): offset for tp, offset in committed.items() if offset > 0}
    if not wanted:
        return {}
    try:
        deleted = await admin.delete_records(wanted, timeout_ms=timeout_ms)
    except Exception as exc:
        logger.warning(
            "purging repartition records failed; will retry after the next commit: %s", exc
        )
        return {}
    out: dict[TopicPartition, int] = {}
    for (topic, partition), low in deleted.items():
        if isinstance(low, int):
            out[TopicPartition(topic, partition)] = low
        else:
            logger.warning("purging %s-%d failed; retried later: %s", topic, partition, low)
    return out


class RepartitionPurger:
    """Purges a thread's consumed repartition records after commits, at most every
    ``repartition.purge.interval.ms`` (Kafka Streams' default: 30 s), in the background so a
    commit never waits for DeleteRecords. One purge is in flight at a time; the admin client
    is created on first use (a topology without repartition topics never creates one)."""

    def __init__(
        self,
        repartition_topics: Iterable[str],
        make_admin: Callable[[], AdminClient],
        clock: Clock,
        interval_ms: int = 30_000,
    ) -> None:
        self._topics = frozenset(repartition_topics)
        self._make_admin = make_admin
        self._clock = clock
        self._interval_ms = interval_ms
        self._next_ms = clock.now_ms() + interval_ms
        self._admin: AdminClient | None = None
        self._task: asyncio.Task[None] | None = None
        self.purged: dict[TopicPartition, int] = {}  # last log start offset per partition

    def after_commit(self, committed: Iterable[tuple[tuple[str, int], int]]) -> None:
        """Called with the offsets just committed: ((topic, partition), next offset) pairs."""
        wanted = {
            TopicPartition(topic, partition): offset
            for (topic, partition), offset in committed
            if topic in self._topics
        }
        now = self._clock.now_ms()
        if not wanted or now < self._next_ms or (self._task and not self._task.done()):
            return
        self._next_ms = now + self._interval_ms
        self._task = asyncio.get_running_loop().create_task(self._purge(wanted))

    async def _purge(self, wanted: dict[TopicPartition, int]) -> None:
        if self._admin is None:
            self._admin = self._make_admin()
        self.purged.update(await purge_repartition_records(self._admin, wanted))

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._admin is not None:
            await self._admin.close()
            self._admin = None
