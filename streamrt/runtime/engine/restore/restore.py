"""ChangelogRestorer: brings stores up to their changelog's end before their task runs.

Each store resumes from the changelog offset stored in its own WriteBatch; a store whose
offset equals the changelog end restores nothing. Restoration is done in steps, between
processing batches, so tasks that are ready keep processing while others restore. Stores are
reached only through each task's :class:`~streamrt.state.StateManager`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from streamrt.logs import fields
from streamrt.runtime.engine.clients.end_offsets import end_offsets_through_faults
from streamrt.runtime.engine.restore.changelog_reader import ChangelogReader
from streamrt.runtime.engine.restore_consumer import (
    ChangelogBatch,
    gc_paused,
)
from streamrt.state import StateManager
from streamrt.topic_partition import TopicPartition

__all__ = ("ChangelogRestorer", "RestoreStats")

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class RestoreStats:
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0


@dataclass(slots=True)
class _Pending:
    state: StateManager
    ends: dict[TopicPartition, int]
    started: float = field(default_factory=time.monotonic)
    records: int = 0
    bytes: int = 0
    total: int = 0  # changelog records between the stores' positions and the ends (at most)


class ChangelogRestorer(ChangelogReader):
    """Responsibilities: seek the restore consumer, apply changelog batches, report progress."""

    def _init_state(self) -> None:
        self.stats = RestoreStats()
        self._pending: dict[str, _Pending] = {}
        self._state_of: dict[TopicPartition, StateManager] = {}

    @property
    def restoring(self) -> list[str]:
        """Ids of the tasks still restoring."""
        return list(self._pending)

    def progress(self) -> dict[str, tuple[int, int]]:
        """Per restoring task: (records applied, records to apply at most: compaction and
        transaction markers make the real count lower)."""
        return {task: (p.records, p.total) for task, p in list(self._pending.items())}

    async def add(self, state: StateManager) -> bool:
        """Register an opened task's state; returns True if it is ready at once."""
        positions = state.positions()
        if not positions:
            return True
        tps = list(positions)
        ends = await end_offsets_through_faults(self.offsets, tps)
        todo: dict[TopicPartition, int] = {}
        for tp, position in positions.items():
            end = ends[tp]
            if position is None and end == 0:
                state.mark_restored(tp, 0)  # an empty changelog: the empty store is complete
                continue
            if position is not None and position >= end:
                continue  # the checkpoint is at the changelog end: nothing to restore
            todo[tp] = end
            self._state_of[tp] = state
        logger.info(
            "restoration needed" if todo else "state is up to date, nothing to restore",
            extra=fields(
                thread=self.thread_name,
                task=state.task_id,
                **{"from": {f"{t.topic}-{t.partition}": positions[t] for t in positions}},
                to={f"{tp.topic}-{tp.partition}": e for tp, e in todo.items()},
            ),
        )
        if not todo:
            return True
        self.emit(
            "restore_started",
            task=state.task_id,
            # from: the store's own offset (None: no checkpoint, restored from the beginning)
            **{"from": {f"{tp.topic}-{tp.partition}": positions[tp] for tp in todo}},
            to={f"{tp.topic}-{tp.partition}": end for tp, end in todo.items()},
        )
        total = sum(end - (positions[tp] or 0) for tp, end in todo.items())
        self._pending[state.task_id] = _Pending(state, todo, total=total)
        await self._reassign()
        return False

    async def _reassign(self) -> None:
        """Assign every pending changelog partition and seek each to its store's checkpoint.

        ``assign`` forgets positions, so all partitions are sought again, each from the
        offset its store has recorded (restored batches included).
        """
        tps = [tp for p in self._pending.values() for tp in p.ends]
        await self.consumer.assign_at({tp: self._state_of[tp].position(tp) for tp in tps})

    async def remove(self, task_id: str) -> None:
        """Drop a task (revoked while restoring)."""
        pending = self._pending.pop(task_id, None)
        if pending is None:
            return
        for tp in pending.ends:
            self._state_of.pop(tp, None)
        await self._reassign()

    async def step(self, timeout_ms: int = 50) -> list[str]:
        """Apply one batch of changelog records; returns ids of tasks that finished."""
        if not self._pending:
            return []
        began = time.monotonic()
        batches = await self.consumer.fetch(timeout_ms)
        with gc_paused():
            for tp, batch in batches.items():
                self._apply(tp, batch)
        done = [task_id for task_id in list(self._pending) if await self._finished(task_id)]
        self.stats.seconds += time.monotonic() - began
        if done:
            await self._reassign()
        return done

    def _apply(self, tp: TopicPartition, batch: ChangelogBatch) -> None:
        """Write one fetched batch into its store, with the offset after it, and report."""
        state = self._state_of.get(tp)
        if state is None or not batch.rows:
            return
        store_name = state.store_for(tp)
        next_offset, size = batch.next_offset, batch.size
        state.restore_batch(tp, batch.rows, next_offset)
        self.stats.records += len(batch.rows)
        self.stats.bytes += size
        pending = self._pending[state.task_id]
        pending.records += len(batch.rows)
        pending.bytes += size
        self.emit(
            "restore_progress",
            task=state.task_id,
            store=store_name,
            records=pending.records,
            bytes=pending.bytes,
            offset=next_offset,
            end=pending.ends.get(tp),
        )
        logger.info(
            "restoring",
            extra=fields(
                thread=self.thread_name,
                task=state.task_id,
                store=store_name,
                offset=next_offset,
                end=pending.ends.get(tp),
            ),
        )

    async def _finished(self, task_id: str) -> bool:
        """Mark the task's changelogs the consumer reached; True (and reported) if it is done."""
        pending = self._pending[task_id]
        for tp in list(pending.ends):
            position = await self.consumer.position(tp)
            if position is not None and position >= pending.ends[tp]:
                # the position can pass compacted-away or marker offsets: record the end
                self._state_of.pop(tp).mark_restored(tp, pending.ends.pop(tp))
        if pending.ends:
            return False
        del self._pending[task_id]
        elapsed = time.monotonic() - pending.started
        logger.info(
            "restoration complete",
            extra=fields(
                thread=self.thread_name,
                task=task_id,
                records=pending.records,
                seconds=round(elapsed, 3),
            ),
        )
        self.emit(
            "restore_complete",
            task=task_id,
            records=pending.records,
            bytes=pending.bytes,
            seconds=round(elapsed, 3),
        )
        return True
