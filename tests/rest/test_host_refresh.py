"""A static member back with a new application.server: peers learn the new host at once,
without a rebalance (through the ``<application.id>-metadata`` topic, not the assignment)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, wait_until
from tests.rest.instances import free_port, running, start_instance

pytestmark = pytest.mark.slow

BROKER = {"group.min.session.timeout.ms": "1000"}


def host_of(app: App, instance: str) -> str | None:
    for m in app.metadata_for_all_clients():
        if m.instance_id == instance:
            return f"{m.host}:{m.port}"
    return None


def rebalances(app: App) -> int:
    return sum(t.rebalances for t in app.metadata_for_local_threads())


def test_restart_with_new_application_server(
    broker_factory: Callable[..., object], tmp_path: Path
) -> None:
    broker = broker_factory(BROKER)
    bootstrap = broker.bootstrap  # type: ignore[attr-defined]
    create_topic(bootstrap, "events", 4)
    create_topic(bootstrap, "event-counts-out", 4)
    a = start_instance(bootstrap, tmp_path, "web-a", threads=1)
    b = start_instance(bootstrap, tmp_path, "web-b", threads=1)
    restarted: App | None = None
    try:
        wait_until(lambda: running(a, b, partitions=4), 60, "both running")
        old = b.config.application_server if b.config else None
        wait_until(lambda: host_of(a, "web-b") == old, 15, "a knows b's first host")
        settled = rebalances(a)
        partitions_of_a = {p for t in a.metadata_for_local_threads() for p in t.topic_partitions}

        b.stop()  # static member: no LeaveGroup; back well within session.timeout.ms
        new_port = free_port()
        restarted = start_instance(bootstrap, tmp_path, "web-b", threads=1, port=new_port)
        new = f"127.0.0.1:{new_port}"
        assert new != old
        wait_until(lambda: host_of(a, "web-b") == new, 15, "a sees b's new host")

        wait_until(lambda: running(a, restarted, partitions=4), 30, "restarted b running")
        assert rebalances(a) == settled  # no rebalance happened on a
        assert {p for t in a.metadata_for_local_threads() for p in t.topic_partitions} == (
            partitions_of_a
        )
        assert host_of(restarted, "web-b") == new
    finally:
        for app in (a, b, restarted):
            if app is not None:
                app.stop()
