"""Kafka Streams' metrics under the names a JMX-exporter user's dashboards already query.

The MBean ``kafka.streams:type=stream-thread-metrics,thread-id=T`` attribute ``process-rate``
becomes ``kafka_streams_stream_thread_metrics_process_rate{thread_id="T"}``: the domain, the
``type`` and the attribute with ``-``/``.`` as ``_``, the other MBean keys as labels (the JMX
exporter's usual Kafka Streams rules; ``docs/operations.md`` has the whole mapping). The stream
thread only counts (:mod:`streamrt.runtime.sensors`); rates, averages and ratios are computed
here, between the counters of this scrape and those of the oldest scrape within the last
:data:`RATE_WINDOW_NS` (the first scrape measures from the thread's start).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from streamrt.runtime.sensors import StreamsSnapshot

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("RATE_WINDOW_NS", "StreamsCollector", "flatten")

#: rates cover about this long (Kafka's two 30 s samples; Prometheus scrapes every 15-60 s)
RATE_WINDOW_NS = 60_000_000_000

Key = tuple[str, ...]
Counters = dict[Key, float]

THREAD = ("thread_id",)
TASK = ("thread_id", "task_id")
NODE = ("thread_id", "task_id", "processor_node_id")
STORE = ("thread_id", "task_id", "store_type", "state_id")
CACHE = ("thread_id", "task_id", "record_cache_id")
FETCH = ("client_id", "topic", "partition")

#: Kafka's store type in the ``[store-type]-state-id`` tag
STORE_TYPES = {"rocksDB": "rocksdb", "in_memory": "in-memory"}
ACTIVITIES = ("commit", "poll", "process", "punctuate")


def flatten(s: StreamsSnapshot) -> Counters:
    """Every counter of a snapshot under one key, so two scrapes subtract key by key."""
    out: Counters = {("polled",): s.polled_records, ("created",): s.tasks_created}
    out[("closed",)] = s.tasks_closed
    for name in ACTIVITIES:
        count, nanos, _ = getattr(s, name)
        out[(name, "count")], out[(name, "nanos")] = count, nanos
    for tid, t in s.tasks.items():
        out[("task", tid, "processed")], out[("task", tid, "dropped")] = t.processed, t.dropped
        for node, n in t.nodes.items():
            out[("node", tid, node)] = n
        for store, (_, ops) in t.stores.items():
            for op in ("puts", "gets", "deletes", "misses"):
                out[("store", tid, store, op)] = getattr(ops, op)
    return out


class _Window:
    """One thread's earlier scrapes: the base its rates are computed against."""

    def __init__(self) -> None:
        self.samples: deque[tuple[int, Counters]] = deque()

    def base(self, now_ns: int, start_ns: int, current: Counters) -> tuple[int, Counters]:
        samples = self.samples
        while len(samples) > 1 and samples[1][0] <= now_ns - RATE_WINDOW_NS:
            samples.popleft()
        base = samples[0] if samples and samples[0][0] < now_ns else (start_ns, {})
        samples.append((now_ns, current))
        return base


class _Families:
    """The metric families of one scrape, created on first use, in a stable order."""

    def __init__(self) -> None:
        self.families: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}

    def add(
        self, group: str, name: str, labels: tuple[str, ...], values: list[str], v: float
    ) -> None:
        prefix = "kafka_consumer_" if group.startswith("consumer") else "kafka_streams_"
        full = (prefix + group + "_" + name).replace("-", "_")
        family = self.families.get(full)
        if family is None:
            helptext = f"Kafka's {group} {name}"
            # a gauge that Kafka happens to name ``-total`` (it goes down) stays a gauge
            counter = name.endswith("-total") and not name.startswith("restore-remaining")
            family = (
                CounterMetricFamily(full, helptext, labels=list(labels))
                if counter
                else GaugeMetricFamily(full, helptext, labels=list(labels))
            )
            self.families[full] = family
        family.add_metric(values, v)


class _Scrape:
    """The Kafka-named values of one thread: counters now minus counters at the base."""

    def __init__(
        self, out: _Families, snap: StreamsSnapshot, cur: Counters, base: Counters
    ) -> None:
        self.out, self.snap, self.cur, self.base = out, snap, cur, base

    def delta(self, key: Key) -> float:
        now, before = self.cur.get(key, 0.0), self.base.get(key, 0.0)
        return now if now < before else now - before  # a counter that restarted (task moved)


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def thread_metrics(sc: _Scrape, seconds: float, thread: str) -> None:
    """``stream-thread-metrics``: commit, poll, process, punctuate; tasks; ratios."""
    g, labels = "stream-thread-metrics", [thread]
    add = sc.out.add
    for name in ACTIVITIES:
        total, _, max_ns = getattr(sc.snap, name)
        count, nanos = sc.delta((name, "count")), sc.delta((name, "nanos"))
        add(g, f"{name}-total", THREAD, labels, total)
        add(g, f"{name}-rate", THREAD, labels, _ratio(count, seconds))
        add(g, f"{name}-latency-avg", THREAD, labels, _ratio(nanos, count) / 1e6)
        add(g, f"{name}-latency-max", THREAD, labels, max_ns / 1e6)
        # an activity is counted when it ends: one begun before the base can overshoot 1
        add(g, f"{name}-ratio", THREAD, labels, min(_ratio(nanos / 1e9, seconds), 1.0))
    polls = sc.delta(("poll", "count"))
    add(g, "poll-records-avg", THREAD, labels, _ratio(sc.delta(("polled",)), polls))
    add(g, "poll-records-max", THREAD, labels, sc.snap.polled_max)
    add(g, "process-records-avg", THREAD, labels, _ratio(sc.delta(("process", "count")), polls))
    add(g, "process-records-max", THREAD, labels, sc.snap.processed_max)
    for name, key in (("task-created", "created"), ("task-closed", "closed")):
        add(g, f"{name}-total", THREAD, labels, sc.cur[(key,)])
        add(g, f"{name}-rate", THREAD, labels, _ratio(sc.delta((key,)), seconds))
    add(g, "blocked-time-ns-total", THREAD, labels, sc.snap.poll[1])
    add(g, "thread-start-time", THREAD, labels, sc.snap.start_ms)


def task_metrics(sc: _Scrape, seconds: float, thread: str) -> None:
    """``stream-task-metrics``, ``stream-processor-node-metrics``, ``stream-state-metrics``
    and ``stream-record-cache-metrics`` of the thread's running tasks."""
    add = sc.out.add
    for tid, t in sorted(sc.snap.tasks.items()):
        task = [thread, tid]
        for name, value in (("process", "processed"), ("dropped-records", "dropped")):
            add("stream-task-metrics", f"{name}-total", TASK, task, sc.cur[("task", tid, value)])
            rate = _ratio(sc.delta(("task", tid, value)), seconds)
            add("stream-task-metrics", f"{name}-rate", TASK, task, rate)
        for node in sorted(t.nodes):
            labels = [*task, node]
            g = "stream-processor-node-metrics"
            add(g, "process-total", NODE, labels, sc.cur[("node", tid, node)])
            add(g, "process-rate", NODE, labels, _ratio(sc.delta(("node", tid, node)), seconds))
        for store, (kind, _) in sorted(t.stores.items()):
            labels = [*task, STORE_TYPES.get(kind, kind), store]
            for op, name in (("puts", "put"), ("gets", "get"), ("deletes", "delete")):
                rate = _ratio(sc.delta(("store", tid, store, op)), seconds)
                add("stream-state-metrics", f"{name}-rate", STORE, labels, rate)
            if store in t.cached:
                gets = sc.delta(("store", tid, store, "gets"))
                ratio = _ratio(gets - sc.delta(("store", tid, store, "misses")), gets)
                for name in ("hit-ratio-avg", "hit-ratio-min", "hit-ratio-max"):
                    add("stream-record-cache-metrics", name, CACHE, [*task, store], ratio)
    # every active task has it (0 once restored), as in Kafka
    remaining = {**dict.fromkeys(sc.snap.tasks, 0), **sc.snap.restore_remaining}
    for tid, left in sorted(remaining.items()):
        g = "stream-task-metrics"
        add(g, "restore-remaining-records-total", TASK, [thread, tid], left)


def fetch_metrics(out: _Families, snap: StreamsSnapshot, client_id: str) -> None:
    """The thread consumer's ``records-lag`` per partition and ``records-lag-max``."""
    g = "consumer-fetch-manager-metrics"
    for (topic, partition), lag in sorted(snap.partition_lags.items()):
        out.add(g, "records-lag", FETCH, [client_id, topic, str(partition)], lag)
    lags = snap.partition_lags.values()
    out.add(g, "records-lag-max", ("client_id",), [client_id], max(lags) if lags else 0)


class StreamsCollector(Collector):
    """The Kafka Streams metrics of one instance's threads (see the module docstring)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()  # scrapes may run in parallel on the server's pool

    def collect(self) -> Iterator[Metric]:
        out = _Families()
        with self._lock:
            for t in self.app.metadata_for_local_threads():
                snap = t.streams
                if snap is None:
                    continue
                current = flatten(snap)
                window = self._windows.setdefault(t.thread_name, _Window())
                base_ns, base = window.base(snap.now_ns, snap.start_ns, current)
                seconds = max((snap.now_ns - base_ns) / 1e9, 1e-9)
                scrape = _Scrape(out, snap, current, base)
                thread_metrics(scrape, seconds, t.thread_name)
                task_metrics(scrape, seconds, t.thread_name)
                fetch_metrics(out, snap, t.client_id)
                # KIP-869's thread-level task counts (the restoring is the stream thread's here)
                g, labels = "stream-state-updater-metrics", [t.thread_name]
                out.add(g, "active-restoring-tasks", THREAD, labels, len(t.restoring_tasks))
                out.add(g, "standby-updating-tasks", THREAD, labels, len(t.standby_tasks))
        yield from out.families.values()
