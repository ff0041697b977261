"""The copy of a stream thread's sensors and its tasks' counters that a scrape reads.

Why a copy: the REST thread computes rates from it while the stream thread goes on counting;
every container is copied in one C-level call (atomic under the GIL), ints are read as is.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Mapping
from typing import Any

from streamrt.runtime.engine.tasks.metered_task import MeteredTask
from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.runtime.engine.tasks.task_manager import TaskManager
from streamrt.runtime.engine.tasks.task_progress import partition_lags
from streamrt.runtime.sensors import (
    StoreOps,
    StreamsSnapshot,
    TaskSnapshot,
    ThreadSensors,
    activity_tuple,
)
from streamrt.runtime.stores import CachingStore
from streamrt.state import ROCKS_DB

__all__ = ("LoopMeter", "streams_snapshot", "task_snapshot", "thread_snapshot")


class LoopMeter:
    """Times the run loop's poll, process, punctuate and commit into the thread's sensors:
    a few clock reads per loop iteration, none per record (the tasks count those)."""

    def __init__(self, sensors: ThreadSensors) -> None:
        self.sensors = sensors

    async def poll(self, polling: Awaitable[dict[Any, list[Any]]]) -> dict[Any, list[Any]]:
        began = time.perf_counter_ns()
        batches = await polling
        done = time.perf_counter_ns()
        sensors = self.sensors
        sensors.poll.record(done - began, done)
        if batches:
            n = sum(len(records) for records in batches.values())
            sensors.polled_records += n
            sensors.polled_max.observe(n, done)
        return batches

    async def process(self, tasks: TaskManager, processing: Awaitable[int]) -> int:
        """``processing``: the tasks' process call (returns how many tasks ran)."""
        before, began = tasks.records_processed, time.perf_counter_ns()
        ran = await processing
        done = time.perf_counter_ns()
        count = tasks.records_processed - before
        if count > 0:
            self.sensors.process.record(done - began, done, count)
            self.sensors.processed_max.observe(count, done)
        return ran

    def punctuate(self, tasks: TaskManager, now_ms: int) -> None:
        began = time.perf_counter_ns()
        ran = tasks.punctuate(now_ms)
        if ran:
            done = time.perf_counter_ns()
            self.sensors.punctuate.record(done - began, done, ran)

    async def commit(self, committing: Awaitable[Any]) -> None:
        began = time.perf_counter_ns()
        await committing
        done = time.perf_counter_ns()
        self.sensors.commit.record(done - began, done)


def task_snapshot(task: StreamTask) -> TaskSnapshot:
    """One task's processed/dropped records, per-node records and per-store calls."""
    stores: dict[str, tuple[str, StoreOps]] = {}
    cached: set[str] = set()
    for name, view in dict(task.stores).items():
        ops = getattr(view, "ops", None)  # window and session views are not counted
        if not isinstance(ops, StoreOps):
            continue
        spec = task.topology.stores.get(name)
        kind = (spec.kind if spec is not None else None) or ROCKS_DB
        stores[name] = (kind, ops.copy())
        if isinstance(view, CachingStore):
            cached.add(name)
    return TaskSnapshot(
        processed=task.records_processed,
        dropped=task.dropped_records,
        nodes=task.node_records() if isinstance(task, MeteredTask) else {},
        stores=stores,
        cached=frozenset(cached),
    )


def thread_snapshot(sensors: ThreadSensors, manager: TaskManager | None) -> StreamsSnapshot:
    """The snapshot of a thread (with no tasks before its clients started)."""
    if manager is None:
        return streams_snapshot(sensors, {}, set(), (0, 0), {}, {})
    tasks = dict(manager.tasks)
    running = set(tasks) - set(manager.restoring) - set(manager.locked)
    return streams_snapshot(
        sensors,
        tasks,
        running,
        (manager.tasks_created, manager.tasks_closed),
        manager.restorer.progress(),
        partition_lags({t: tasks[t] for t in running}, manager.consumer),
    )


def streams_snapshot(
    sensors: ThreadSensors,
    tasks: Mapping[str, StreamTask],
    running: set[str],
    created_closed: tuple[int, int],
    restore_progress: Mapping[str, tuple[int, int]],
    partition_lags: Mapping[tuple[str, int], int],
) -> StreamsSnapshot:
    """Everything ``stream-*-metrics`` are computed from, for the tasks in ``running``."""
    now = time.perf_counter_ns()
    return StreamsSnapshot(
        now_ns=now,
        start_ms=sensors.start_ms,
        start_ns=sensors.start_ns,
        poll=activity_tuple(sensors.poll, now),
        process=activity_tuple(sensors.process, now),
        punctuate=activity_tuple(sensors.punctuate, now),
        commit=activity_tuple(sensors.commit, now),
        polled_records=sensors.polled_records,
        polled_max=sensors.polled_max.value(now),
        processed_max=sensors.processed_max.value(now),
        tasks_created=created_closed[0],
        tasks_closed=created_closed[1],
        tasks={tid: task_snapshot(t) for tid, t in tasks.items() if tid in running},
        restore_remaining={t: max(n - done, 0) for t, (done, n) in restore_progress.items()},
        partition_lags=dict(partition_lags),
    )
