"""Helpers of the group tests: a broker serving /metrics, and readers of its gauges.

Generic Kafka helpers (topics, produce, ``wait_until``) live in ``tests/kafka_helpers.py``.

The generation and the rebalance count are read from the broker's Prometheus endpoint, the
same way an operator would check that a rolling bounce caused no rebalance.
"""

from __future__ import annotations

import dataclasses
import urllib.request
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from streamrt.broker.embedded import BrokerThread

# Session timeouts of 2-6 s in the tests need a low broker minimum; no initial delay.
GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "4",
}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def start_broker(data_dir: Path, overrides: dict[str, str] | None = None) -> BrokerThread:
    """A broker with fast group timings and /metrics on a free port."""
    return BrokerThread(data_dir, {**GROUP_OVERRIDES, **(overrides or {})}, metrics_port=0).start()


def scrape(broker: BrokerThread) -> Samples:
    """Every sample of ``/metrics`` keyed by (sample name, sorted labels)."""
    assert broker.broker is not None and broker.broker.metrics_bound_port is not None
    url = f"http://127.0.0.1:{broker.broker.metrics_bound_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


@dataclasses.dataclass(frozen=True)
class GroupGauges:
    state: str
    generation: int
    members_static: int
    members_dynamic: int
    rebalances_total: int


def group_gauges(broker: BrokerThread, group: str) -> GroupGauges | None:
    """The group's gauges as /metrics reports them, or None if the group is unknown."""
    samples = scrape(broker)
    states = [
        dict(labels)["state"]
        for (name, labels), value in samples.items()
        if name == "streamrt_group_state" and dict(labels).get("group") == group and value == 1
    ]
    if not states:
        return None
    g = (("group", group),)
    return GroupGauges(
        state=states[0],
        generation=int(samples[("streamrt_group_generation", g)]),
        members_static=int(samples[("streamrt_group_members", (*g, ("membership", "static")))]),
        members_dynamic=int(samples[("streamrt_group_members", (*g, ("membership", "dynamic")))]),
        rebalances_total=int(samples[("streamrt_group_rebalances_total", g)]),
    )


def request_count(broker: BrokerThread, api: str) -> int:
    """Requests of one API (kio's snake_case name, e.g. ``leave_group``) handled so far."""
    return int(scrape(broker).get(("streamrt_broker_requests_total", (("api", api),)), 0))


def stable_with(broker: BrokerThread, group: str, members: int) -> Callable[[], bool]:
    def check() -> bool:
        g = group_gauges(broker, group)
        return (
            g is not None
            and g.state == "Stable"
            and g.members_static + g.members_dynamic == members
        )

    return check
