"""Prometheus metrics of one broker: requests per API and, per group, what operators watch.

Each broker has its own registry (several brokers may live in one test process). Group gauges
are read from the coordinator at scrape time, so they are never stale.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kio.index import _name_from_key
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import start_http_server

__all__ = ("BrokerMetrics",)

logger = logging.getLogger(__name__)


def _api_name(api_key: int) -> str:
    try:
        return _name_from_key(api_key)
    except Exception:
        return str(api_key)


class _GroupCollector:
    def __init__(self, source: Callable[[], Iterable[Any]]) -> None:
        self._source = source

    def collect(self) -> Iterable[Any]:
        state = GaugeMetricFamily(
            "streamrt_group_state", "1 for the group's current state", labels=["group", "state"]
        )
        generation = GaugeMetricFamily(
            "streamrt_group_generation", "Current generation", labels=["group"]
        )
        members = GaugeMetricFamily(
            "streamrt_group_members", "Members by kind", labels=["group", "membership"]
        )
        rebalances = CounterMetricFamily(
            "streamrt_group_rebalances", "Completed join phases", labels=["group"]
        )
        for g in self._source():
            state.add_metric([g.group_id, g.state], 1)
            generation.add_metric([g.group_id], g.generation_id)
            members.add_metric([g.group_id, "static"], g.members_static)
            members.add_metric([g.group_id, "dynamic"], g.members_dynamic)
            rebalances.add_metric([g.group_id], g.rebalances_total)
        yield from (state, generation, members, rebalances)


class BrokerMetrics:
    """Request counters and latencies; group gauges; the optional HTTP endpoint."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._requests = Counter(
            "streamrt_broker_requests", "Requests handled", ["api"], registry=self.registry
        )
        self._latency = Histogram(
            "streamrt_broker_request_seconds",
            "Request handling time (including long-poll and parked time)",
            ["api"],
            registry=self.registry,
            buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30),
        )
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def observe_request(self, api_key: int, seconds: float) -> None:
        name = _api_name(api_key)
        self._requests.labels(name).inc()
        self._latency.labels(name).observe(seconds)

    def watch_groups(self, source: Callable[[], Iterable[Any]]) -> None:
        self.registry.register(_GroupCollector(source))  # type: ignore[arg-type]

    def watch_parked_fetches(self, source: Callable[[], int]) -> None:
        """A gauge of the long-poll fetches parked now (at most one per open connection)."""
        gauge = Gauge(
            "streamrt_broker_parked_fetches",
            "Fetches parked waiting for data",
            registry=self.registry,
        )
        gauge.set_function(source)

    def serve(self, host: str, port: int) -> int:
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        self._server, self._thread = server, thread
        bound = int(server.server_address[1])
        logger.info("metrics on http://%s:%d/metrics", host, bound)
        return bound

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
