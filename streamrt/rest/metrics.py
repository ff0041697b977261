"""Prometheus metrics of one instance, read from its threads' metadata at scrape time.

A collector per app on a private registry (not the global one), so several instances in one
process — as in tests — each expose only their own threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from streamrt.rest.streams_metrics import StreamsCollector
from streamrt.runtime.instance.metadata import AppState
from streamrt.runtime.metadata import ThreadState

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("AppCollector", "render_metrics")


class AppCollector(Collector):
    def __init__(self, app: App) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        labels = ["instance_id", "thread"]
        state = GaugeMetricFamily(
            "streamrt_thread_state",
            "1 for the stream thread's current state, 0 for the others",
            labels=[*labels, "state"],
        )
        processed = CounterMetricFamily(
            "streamrt_records_processed", "Input records processed by the thread", labels=labels
        )
        rebalances = CounterMetricFamily(
            "streamrt_rebalances", "Rebalances (revocations) the thread went through", labels=labels
        )
        restored = CounterMetricFamily(
            "streamrt_records_restored", "Changelog records restored into stores", labels=labels
        )
        restored_bytes = CounterMetricFamily(
            "streamrt_bytes_restored", "Changelog bytes restored into stores", labels=labels
        )
        standby_lag = GaugeMetricFamily(
            "streamrt_standby_lag_records",
            "Changelog records a standby task has not applied yet",
            labels=[*labels, "task"],
        )
        standby_applied = CounterMetricFamily(
            "streamrt_standby_records_applied",
            "Changelog records applied to the thread's standby tasks",
            labels=labels,
        )
        instance = self.app.instance_id
        for t in self.app.metadata_for_local_threads():
            key = [instance, t.thread_name]
            for s in ThreadState:
                state.add_metric([*key, s.value], 1.0 if t.state is s else 0.0)
            processed.add_metric(key, t.records_processed)
            rebalances.add_metric(key, t.rebalances)
            restored.add_metric(key, t.records_restored)
            restored_bytes.add_metric(key, t.bytes_restored)
            standby_applied.add_metric(key, t.standby_records_applied)
            for task, lag in t.standby_lags.items():
                standby_lag.add_metric([*key, task], lag)
        yield from (state, processed, rebalances, restored, restored_bytes)
        yield from (standby_lag, standby_applied)
        yield from self._errors(instance)

    def _errors(self, instance: str) -> Iterator[Metric]:
        """Instance state, thread deaths and records skipped or dead-lettered by handlers."""
        app_state = GaugeMetricFamily(
            "streamrt_app_state",
            "1 for the instance's current state (ERROR: stopped, see /healthz), 0 for the others",
            labels=["instance_id", "state"],
        )
        current = self.app.state
        for s in AppState:
            app_state.add_metric([instance, s.value], 1.0 if current is s else 0.0)
        failures = CounterMetricFamily(
            "streamrt_thread_failures",
            "Stream threads that died (a record failed with handler fail, or another error)",
            labels=["instance_id"],
        )
        failures.add_metric([instance], self.app.thread_failures)
        skipped = CounterMetricFamily(
            "streamrt_records_skipped",
            "Records an exception handler skipped (continue or dlq)",
            labels=["instance_id", "stage", "handler"],
        )
        dlq = CounterMetricFamily(
            "streamrt_dlq_records",
            "Records sent to the dead-letter topic (errors.deadletterqueue.topic.name)",
            labels=["instance_id", "stage"],
        )
        by_handler, dead_lettered = self.app.error_stats.snapshot()
        for (stage, handler), n in sorted(by_handler.items()):
            skipped.add_metric([instance, stage, handler], n)
        for stage, n in sorted(dead_lettered.items()):
            dlq.add_metric([instance, stage], n)
        yield from (app_state, failures, skipped, dlq)


def render_metrics(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def registry_for(app: App) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AppCollector(app))
    registry.register(StreamsCollector(app))  # Kafka Streams' own metric names
    return registry
