"""The at-least-once commit, in one place, over small protocols (no broker needed to test it).

Order, and why (Kafka Streams' commit, then ``postCommit``):

0. check the membership is current: a member the group dropped (a zombie back from a pause
   longer than ``session.timeout.ms``) must not append stale changelog records after those of
   the task's new owner (:class:`TaskMigratedError`, nothing written);
1. flush each task's record cache: cached updates reach the stores, the changelogs and the
   sinks (as producer sends), so that step 2 delivers them;
2. flush the producer: every sink and changelog record is delivered, and we learn the
   changelog offset each store reached;
3. each task writes its stores' data (one WriteBatch per store), their offsets unchanged;
4. commit the input offsets (the tasks give them up only once accepted: those of a commit
   deferred during a rebalance go with the next one);
5. only now each task records its stores as being at the changelog offsets of step 2 (its
   checkpoint), so a checkpoint never runs ahead of a commit the group accepted.

A failure before 4 commits nothing: the input is read again, which at-least-once allows. A
refused commit (the group moved on: :class:`TaskMigratedError`) leaves the checkpoints where
the last accepted commit put them; the thread closes the tasks dirty and rejoins, and a task
that comes back restores from there, over every record its other owner appended meanwhile.
Exactly-once (issue 15) replaces 2 and 4 with a transaction and writes 3 and 5 after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from streamrt.clock import Clock
from streamrt.topic_partition import TopicPartition

__all__ = (
    "CommitDeferredError",
    "CommitSchedule",
    "Committable",
    "OffsetCommitter",
    "ProducerFlush",
    "TaskMigratedError",
    "commit",
)


class TaskMigratedError(Exception):
    """The group moved on without this member (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, or a
    rebalance that took the partitions): its tasks may already be another member's, so they
    are closed dirty, nothing more is committed or checkpointed, and the thread rejoins
    (Kafka Streams' TaskMigratedException)."""


class CommitDeferredError(Exception):
    """The offsets were refused during a rebalance while this member still owns their
    partitions (REBALANCE_IN_PROGRESS): they go again with the next commit, and the
    checkpoints wait for it."""


class ProducerFlush(Protocol):
    async def flush(self) -> Mapping[TopicPartition, int]:
        """Deliver everything sent; the next offset reached per partition."""
        ...


class Committable(Protocol):
    """A task: flushes its cache (step 1) and state (step 3), hands over its input offsets,
    and checkpoints (step 5). Its ``processed`` offsets are taken only once the commit is
    accepted, so those of a deferred commit are sent again with the next one, even if
    nothing is processed meanwhile (neither membership must keep them)."""

    @property
    def processed(self) -> Mapping[TopicPartition, int]:
        """Input partition → next offset to commit, since the last accepted commit."""
        ...

    def flush_cache(self) -> None: ...

    def write_state(self, delivered: dict[TopicPartition, int]) -> None: ...

    def take_offsets(self) -> dict[TopicPartition, int]: ...

    def checkpoint(self) -> None: ...

    def keep_delivered(self, delivered: dict[TopicPartition, int]) -> None:
        """Not committed this time: keep its changelog ends for its own next checkpoint."""
        ...


class OffsetCommitter(Protocol):
    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Raises :class:`TaskMigratedError` or :class:`CommitDeferredError` when refused."""
        ...

    async def check_generation(self) -> None:
        """Raise :class:`TaskMigratedError` if the group no longer has this member."""
        ...


async def commit(
    producer: ProducerFlush,
    tasks: Iterable[Committable],
    committer: OffsetCommitter,
    others: Iterable[Committable] = (),
) -> dict[TopicPartition, int]:
    """Run steps 0-5; returns the input offsets committed (empty: nothing committed).

    ``others``: the thread's tasks not committed this time (a revocation commits only the
    revoked ones). The flush reports every delivery once, theirs too: they keep their ends,
    or their next checkpoint would stay behind the changelog and a clean restart restore."""
    tasks = list(tasks)
    if tasks:
        await committer.check_generation()  # 0
    for task in tasks:
        task.flush_cache()  # 1
    delivered = dict(await producer.flush())  # 2
    for task in others:
        task.keep_delivered(delivered)
    for task in tasks:
        task.write_state(delivered)  # 3
    offsets: dict[TopicPartition, int] = {}
    for task in tasks:  # taken once accepted: a deferred commit's go with the next one
        offsets.update(task.processed)
    if offsets:
        try:
            await committer.commit(offsets)  # 4
        except CommitDeferredError:
            return {}
    for task in tasks:
        task.take_offsets()
        task.checkpoint()  # 5
    return offsets


class CommitSchedule:
    """When the next periodic commit is due (``commit.interval.ms``), on an injected clock."""

    def __init__(self, clock: Clock, interval_ms: int) -> None:
        self._clock = clock
        self.interval_ms = interval_ms
        self._next_ms = clock.now_ms() + interval_ms

    def due(self) -> bool:
        return self._clock.now_ms() >= self._next_ms

    def committed(self) -> None:
        """Start the next interval from now."""
        self._next_ms = self._clock.now_ms() + self.interval_ms
