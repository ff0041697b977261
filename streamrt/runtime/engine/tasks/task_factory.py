"""TaskFactory: builds a thread's active and standby tasks from the topology and the config,
so the TaskManager decides *when* a task exists and never *how* it is put together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streamrt.runtime.engine.clients.zero_timestamp import ZeroTimestampGuard
from streamrt.runtime.engine.collector import Collector
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.restore.standby import StandbyTask
from streamrt.runtime.engine.tasks.metered_task import MeteredTask
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId
from streamrt.runtime.stores import RecordCache

__all__ = ("TaskFactory",)


@dataclass(frozen=True, slots=True)
class TaskFactory:
    """One per thread: its tasks share the thread's collector (producer) and record cache."""

    env: ThreadEnv
    collector: Collector
    cache: RecordCache

    def active(self, task_id: TaskId) -> StreamTask:
        """A task; at ``metrics.recording.level`` DEBUG one that also counts per node. Under
        exactly_once_v2 its sends pass a :class:`ZeroTimestampGuard` (engine/zero_timestamp)."""
        cfg = self.env.config
        kind = StreamTask if cfg.metrics_recording_level == "INFO" else MeteredTask
        guard = ZeroTimestampGuard(self.collector, str(task_id)) if cfg.exactly_once else None
        task = kind(
            task_id,
            self.env.subtopologies[task_id.subtopology],
            self.env.topology,
            cfg.application_id,
            Path(cfg.state_dir),
            guard or self.collector,
            default_store=cfg.default_dsl_store,
            errors=self.env.errors,
            cache=self.cache,
            timestamp_extractor=cfg.timestamp_extractor(),
            clock=self.env.clock,
            partition_counts=self.collector,
        )
        if guard is not None:
            guard.watch(task.record)
        return task

    def standby(self, task_id: str) -> StandbyTask:
        cfg = self.env.config
        return StandbyTask(
            task_id,
            self.env.subtopologies[TaskId.parse(task_id).subtopology],
            self.env.topology,
            cfg.application_id,
            Path(cfg.state_dir),
            default_store=cfg.default_dsl_store,
        )
