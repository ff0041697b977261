"""Kafka Streams' sensors, kept as plain counters; rates and averages are computed at scrape time.

Why plain ints: the stream thread counts per loop iteration (and a few per record) without
locks or timers; the REST thread reads copies and turns two scrapes' difference into
``process-rate``, ``commit-latency-avg``, ``poll-ratio``... (``streamrt.rest.streams_metrics``).
A windowed maximum (``*-latency-max``) is the only value kept in the thread, as Kafka keeps
it: over the last one to two :data:`MAX_WINDOW_NS` windows.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = (
    "MAX_WINDOW_NS",
    "Activity",
    "StoreOps",
    "StreamsSnapshot",
    "TaskSnapshot",
    "ThreadSensors",
    "WindowedMax",
    "activity_tuple",
)

#: how long a maximum counts (Kafka's metrics.sample.window.ms, 30 s)
MAX_WINDOW_NS = 30_000_000_000


class WindowedMax:
    """The largest value observed in the current or the previous window (0 once both ended)."""

    __slots__ = ("current", "previous", "window_end")

    def __init__(self) -> None:
        self.current = 0.0
        self.previous = 0.0
        self.window_end = 0

    def observe(self, value: float, now_ns: int) -> None:
        if now_ns >= self.window_end:
            stale = now_ns >= self.window_end + MAX_WINDOW_NS
            self.previous = 0.0 if stale else self.current
            self.current = 0.0
            self.window_end = now_ns + MAX_WINDOW_NS
        if value > self.current:
            self.current = value

    def value(self, now_ns: int) -> float:
        if now_ns >= self.window_end + MAX_WINDOW_NS:
            return 0.0
        if now_ns >= self.window_end:
            return self.current
        return max(self.current, self.previous)


class Activity:
    """One timed activity of the thread loop (poll, process, punctuate, commit): how often,
    for how long in total, and the windowed maximum of one occurrence's time."""

    __slots__ = ("count", "max_ns", "nanos")

    def __init__(self) -> None:
        self.count = 0
        self.nanos = 0
        self.max_ns = WindowedMax()

    def record(self, nanos: int, now_ns: int, count: int = 1) -> None:
        """``count`` occurrences took ``nanos`` together (the max is of their average)."""
        self.count += count
        self.nanos += nanos
        self.max_ns.observe(nanos / count, now_ns)


class ThreadSensors:
    """The stream thread's loop counters (``stream-thread-metrics``); written by that thread."""

    def __init__(self) -> None:
        self.start_ms = int(time.time() * 1000)  # thread-start-time
        self.start_ns = time.perf_counter_ns()  # the first scrape's rates start here
        self.poll = Activity()  # one per consumer poll
        self.process = Activity()  # count: records; nanos: the loop's process time
        self.punctuate = Activity()  # count: punctuators run
        self.commit = Activity()  # one per commit of the thread's tasks
        self.polled_records = 0
        self.polled_max = WindowedMax()  # records from one poll
        self.processed_max = WindowedMax()  # records processed in one iteration


class StoreOps:
    """Calls a processor made on one store (``stream-state-metrics``), and for a cached store
    how many reads the record cache did not answer (``stream-record-cache-metrics``)."""

    __slots__ = ("deletes", "gets", "misses", "puts")

    def __init__(self) -> None:
        self.puts = 0
        self.gets = 0
        self.deletes = 0
        self.misses = 0

    def copy(self) -> StoreOps:
        out = StoreOps()
        out.puts, out.gets, out.deletes = self.puts, self.gets, self.deletes
        out.misses = self.misses
        return out


@dataclass(frozen=True, slots=True)
class TaskSnapshot:
    """One active task's counters at a scrape."""

    processed: int
    dropped: int
    nodes: Mapping[str, int]  # processor node → records it processed (DEBUG level only)
    stores: Mapping[str, tuple[str, StoreOps]]  # store → (kind, its calls)
    cached: frozenset[str]  # stores with a record cache in front


@dataclass(frozen=True, slots=True)
class StreamsSnapshot:
    """Everything the Kafka-named metrics of one thread are computed from (copied, read-only)."""

    now_ns: int  # time.perf_counter_ns() of the copy
    start_ms: int
    start_ns: int
    poll: tuple[int, int, float]  # count, nanos, max ns
    process: tuple[int, int, float]
    punctuate: tuple[int, int, float]
    commit: tuple[int, int, float]
    polled_records: int
    polled_max: float
    processed_max: float
    tasks_created: int
    tasks_closed: int
    tasks: Mapping[str, TaskSnapshot] = field(default_factory=dict)
    restore_remaining: Mapping[str, int] = field(default_factory=dict)
    partition_lags: Mapping[tuple[str, int], int] = field(default_factory=dict)


def activity_tuple(a: Activity, now_ns: int) -> tuple[int, int, float]:
    return a.count, a.nanos, a.max_ns.value(now_ns)
