"""RebalanceListener: aiokafka's rebalance callbacks, turned into TaskManager calls.

Both run on the thread's event loop, inside the consumer's poll. A revocation commits what was
processed and closes the tasks that lose their partitions; an assignment hands the task set
the leader computed (the assignment's user data, not the partitions) to the TaskManager.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from aiokafka import ConsumerRebalanceListener

from streamrt.logs import fields
from streamrt.runtime.engine.assignor import AssignmentInfo
from streamrt.runtime.engine.committers import Committer
from streamrt.runtime.engine.start_ahead import StartAhead
from streamrt.runtime.engine.task import TopicPartition
from streamrt.runtime.engine.task_manager import TaskManager
from streamrt.runtime.metadata import ThreadState

__all__ = ("RebalanceListener", "RebalancingThread")

logger = logging.getLogger(__name__)


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


class RebalanceListener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, thread: RebalancingThread, tasks: TaskManager, committer: Committer):
        self.thread = thread
        self.tasks = tasks
        self.committer = committer

    async def on_partitions_revoked(self, revoked: Any) -> None:
        thread, partitions = self.thread, sorted(_partitions(revoked))
        thread.rebalances += 1
        gone = self.tasks.tasks_of(partitions)
        logger.info(
            "partitions revoked",
            extra=fields(thread=thread.name, partitions=partitions, tasks=gone),
        )
        thread.emit("rebalance_started", generation=thread.generation)
        thread.emit("revocation", partitions=partitions, tasks=gone)
        async with thread.commit_lock:
            try:
                await self.committer.commit(self.tasks)
            except Exception as exc:  # the group moved on: uncommitted input is re-read
                logger.warning(
                    "commit on revocation failed", extra=fields(thread=thread.name, error=repr(exc))
                )
            await self.tasks.close(gone)
        await thread.before_join()

    async def on_partitions_assigned(self, assigned: Any) -> None:
        thread, partitions = self.thread, sorted(_partitions(assigned))
        if thread.state in (ThreadState.PENDING_SHUTDOWN, ThreadState.DEAD):
            return  # a join that completed while stopping: no tasks to start
        info = thread.assignment_info
        wanted = sorted(set(info.tasks)) if info else []
        thread.transition(ThreadState.PARTITIONS_ASSIGNED)
        thread.mark("assigned")
        logger.info(
            "partitions assigned",
            extra=fields(thread=thread.name, partitions=partitions, tasks=wanted),
        )
        thread.emit("rebalance_complete", generation=thread.generation)
        thread.emit("assignment", partitions=partitions, tasks=wanted)
        async with thread.commit_lock:
            await self.tasks.assign(wanted, info.standby_tasks if info else ())
            if self.tasks.all_running:
                thread.tasks_running()


def _partitions(tps: Any) -> list[TopicPartition]:
    return [TopicPartition(tp.topic, tp.partition) for tp in tps]
