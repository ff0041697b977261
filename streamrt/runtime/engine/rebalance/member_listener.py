"""MemberListener: streamrt's group member's callbacks, turned into consumer and task changes.

The thread's consumer is in manual-assign mode, so each callback also sets its assignment:
revoked or lost partitions leave it, assigned ones join it at their committed offsets. aiokafka's
``assign`` replaces the whole assignment (positions and pauses included), so the partitions that
stay are put back at their positions and paused again if they were: their tasks see nothing.

Revoked (eager: everything, before the join; cooperative: only what moves, after the sync)
commits and closes those tasks; lost closes them dirty, nothing committed (Kafka Streams'
handleLostAll); assigned hands the leader's task set (the assignment's user data, not the
partitions) to the TaskManager.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, Protocol

from streamrt.logs import fields
from streamrt.membership.member import RebalanceListener as MemberRebalanceListener
from streamrt.runtime.engine.assignment.assignor import AssignmentInfo
from streamrt.runtime.engine.commit.committers import Committer
from streamrt.runtime.engine.main_consumer import MainConsumer
from streamrt.runtime.engine.rebalance.own_membership import StreamrtMembership
from streamrt.runtime.engine.rebalance.start_ahead import StartAhead
from streamrt.runtime.engine.rebalance.streams_membership import StreamsMembership
from streamrt.runtime.engine.tasks.task_manager import TaskManager
from streamrt.runtime.metadata import ThreadState
from streamrt.topic_partition import TopicPartition

__all__ = ("MemberListener", "Membership", "RebalancingThread")

#: The thread's group membership: classic (streamrt's own member) or a streams group (KIP-1071).
Membership = StreamrtMembership | StreamsMembership

logger = logging.getLogger(__name__)

_POSITION_WAIT_S = 1.0


class RebalancingThread(Protocol):
    """What the listener needs of its stream thread."""

    name: str
    rebalances: int
    start_ahead: StartAhead

    @property
    def state(self) -> ThreadState: ...

    @property
    def generation(self) -> int | None: ...

    @property
    def assignment_info(self) -> AssignmentInfo | None: ...

    @property
    def commit_lock(self) -> asyncio.Lock: ...

    def transition(self, new: ThreadState) -> None: ...

    def mark(self, name: str) -> None: ...

    def emit(self, type_: str, **kv: Any) -> None: ...

    def tasks_running(self) -> None: ...

    async def before_join(self) -> None: ...


class MemberListener(MemberRebalanceListener):
    """The thread's side of :class:`~streamrt.membership.member.GroupMember`'s callbacks."""

    def __init__(
        self,
        thread: RebalancingThread,
        tasks: TaskManager,
        committer: Committer,
        consumer: MainConsumer,
        membership: Membership,
    ) -> None:
        self.thread = thread
        self.tasks = tasks
        self.committer = committer
        self.consumer = consumer
        self.membership = membership

    async def on_join_prepare(self) -> None:
        """A rebalance begins (cooperative: nothing is revoked yet, so it is said here; eager:
        the revocation said it); list the changelog ends, in case this thread leads."""
        async with self.thread.commit_lock:  # a commit in flight ends in this generation
            self.membership.rebalancing = True
        if not self._eager:
            self.thread.emit("rebalance_started", generation=self.thread.generation)
        await self.thread.before_join()
        self.thread.mark("join_prepared")  # the first time: a hand-off's timeline

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        thread, revoked = self.thread, sorted(partitions)
        gone = self.tasks.tasks_of(revoked)
        logger.info(
            "partitions revoked", extra=fields(thread=thread.name, partitions=revoked, tasks=gone)
        )
        if self._eager:
            thread.emit("rebalance_started", generation=thread.generation)
        thread.emit("revocation", partitions=revoked, tasks=gone)
        async with thread.commit_lock:
            failed: Exception | None = None
            try:  # cooperative: only the moving tasks (under at-least-once)
                await self.committer.commit(self.tasks, None if self._eager else gone)
            except Exception as exc:  # the group moved on: uncommitted input is re-read
                logger.warning(
                    "commit on revocation failed", extra=fields(thread=thread.name, error=repr(exc))
                )
                failed = exc
            await self.tasks.close(gone)
            await self._reassign({})
            if failed is not None and self.committer.recovers(failed):
                await self._kept_tasks_corrupted(failed)

    async def _kept_tasks_corrupted(self, exc: Exception) -> None:
        """exactly_once_v2: the failed commit aborted the one transaction that held every task's
        output, so the tasks that stay lost their uncommitted work too (Kafka Streams' task
        corruption). They close dirty (their checkpoints stay where the last commit put them)
        and their partitions leave the consumer, so the assigned callback that follows opens
        them again at the committed offsets instead of going on past the aborted input."""
        kept = sorted(self.tasks.tasks)
        if kept:
            await self.committer.lose(self.tasks, kept)
            self.thread.emit("tasks_lost", tasks=kept, error=repr(exc))
        self.consumer.assign([])

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        thread, lost = self.thread, sorted(partitions)
        gone = self.tasks.tasks_of(lost)
        logger.warning(
            "partitions lost", extra=fields(thread=thread.name, partitions=lost, tasks=gone)
        )
        thread.emit("partitions_lost", partitions=lost, tasks=gone)
        async with thread.commit_lock:
            await self.committer.lose(self.tasks, gone)
            await self._reassign({})

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.thread.mark("synced")  # the first time: a hand-off's timeline
        self.membership.rebalancing = False  # the new generation is ours: commits may go
        if self.thread.state in (ThreadState.PENDING_SHUTDOWN, ThreadState.DEAD):
            return
        self.thread.rebalances += 1
        added = sorted(partitions)
        # the partitions new to the consumer: the member's new ones, and kept ones whose tasks
        # a failed commit corrupted (they left the consumer to start again where committed)
        starting = sorted(set(self.membership.assignment) - self.consumer.assignment())
        committed = await self.membership.committed(starting) if starting else {}
        await self.thread.start_ahead.producer_ready()  # before a task opens (start_ahead.py)
        async with self.thread.commit_lock:
            await self._reassign(committed, looked_up=starting)
        await self._start_tasks(added)

    async def _start_tasks(self, added: list[TopicPartition]) -> None:
        """Hand the leader's task set (the assignment's user data) to the TaskManager."""
        thread = self.thread
        if thread.state in (ThreadState.PENDING_SHUTDOWN, ThreadState.DEAD):
            return  # stopped during this callback's awaits: no tasks (Kafka Streams skips too)
        info = thread.assignment_info
        wanted = sorted(set(info.tasks)) if info else []
        thread.transition(ThreadState.PARTITIONS_ASSIGNED)
        thread.mark("assigned")
        logger.info(
            "partitions assigned", extra=fields(thread=thread.name, partitions=added, tasks=wanted)
        )
        followup = info is not None and info.followup and not self._eager
        # followup: a second round is due (a tool waiting for a settled group waits for it)
        thread.emit("rebalance_complete", generation=thread.generation, followup=followup)
        thread.emit("assignment", partitions=added, tasks=wanted)
        if followup:
            # the leader held tasks back for a second round; every member asks for it, as
            # Kafka Streams' do (nextScheduledRebalanceMs = 0): the member that must revoke
            # them may have crashed and come back static, with its stored assignment and
            # nothing to revoke, and then no one would
            self.membership.request_rejoin("the leader held tasks back for a second round")
        async with thread.commit_lock:
            await self.tasks.assign(wanted, info.standby_tasks if info else ())
            if self.tasks.all_running:
                thread.tasks_running()

    @property
    def _eager(self) -> bool:
        return not self.membership.cooperative

    async def _reassign(
        self, new_at: dict[TopicPartition, int], looked_up: Iterable[TopicPartition] = ()
    ) -> None:
        """Make the consumer's assignment the member's: partitions that stay keep their
        position and pause; new ones start at ``new_at``, else at their committed offsets
        (looked up here unless in ``looked_up``, never by librdkafka: see rdkafka_consumer),
        else ``auto.offset.reset``.

        The thread's loop polls while this runs (a cooperative rebalance leaves it working):
        the partitions that stay are paused first, so no poll moves their position between
        reading it and seeking back to it (a record returned in between would come again).
        """
        consumer = self.consumer
        wanted = set(self.membership.assignment)
        before = consumer.assignment()
        paused = consumer.paused()
        staying = sorted(wanted & before)
        if staying:
            consumer.pause(*staying)
        kept = {tp: await self._position(tp) for tp in staying}
        unknown = [tp for tp, position in kept.items() if position is None]
        unknown += sorted(wanted - before - set(new_at) - set(looked_up))
        if unknown:
            new_at = {**await self.membership.committed(unknown), **new_at}
        consumer.assign(sorted(wanted))
        for tp, position in kept.items():
            offset = position if position is not None else new_at.get(tp)
            if offset is not None:
                consumer.seek(tp, offset)
        for tp in sorted(wanted - before):
            offset = new_at.get(tp)
            if offset is not None:
                consumer.seek(tp, offset)
        # aiokafka's assign() forgets every pause, librdkafka's keeps them: say both ways
        # which partitions run, so the ones paused above for the positions run again.
        resumed = [tp for tp in staying if tp not in paused]
        if resumed:
            consumer.resume(*resumed)
        still_paused = [tp for tp in paused if tp in wanted]
        if still_paused:
            consumer.pause(*still_paused)

    async def _position(self, tp: TopicPartition) -> int | None:
        """The consumer's position (None: not known yet, e.g. a reset still in flight)."""
        try:
            position: int = await asyncio.wait_for(self.consumer.position(tp), _POSITION_WAIT_S)
        except Exception:
            return None
        return position
