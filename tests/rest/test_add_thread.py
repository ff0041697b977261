"""``POST /v1/threads:add``: one more stream thread from outside the process (Kafka Streams'
addStreamThread), behind the bearer token. Real embedded broker, a real instance."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.kafka_helpers import create_topic, wait_until
from tests.rest.instances import TOKEN, get, running, start_instance, url

pytestmark = pytest.mark.slow


def test_threads_add_starts_a_thread_that_takes_tasks(
    broker_factory: object, tmp_path: Path
) -> None:
    broker = broker_factory({"group.min.session.timeout.ms": "1000"})  # type: ignore[operator]
    create_topic(broker.bootstrap, "events", 8)
    create_topic(broker.bootstrap, "event-counts-out", 8)
    app = start_instance(broker.bootstrap, tmp_path, "web-1", threads=1)
    try:
        wait_until(lambda: running(app), 60, "one thread running")
        add = url(app) + "/v1/threads:add"
        assert httpx.post(add, timeout=30).status_code == 401
        r = httpx.post(add, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert r.status_code == 201 and r.json() == {"thread_index": 2}, r.text
        wait_until(
            lambda: (
                running(app)
                and all(t.active_tasks for t in app.metadata_for_local_threads())
                and len(app.metadata_for_local_threads()) == 2
            ),
            60,
            "two threads sharing the tasks",
        )
        ids = [t["group_instance_id"] for t in get(app, "/v1/threads").json()]
        assert ids == ["web-1-thread-1", "web-1-thread-2"]
    finally:
        app.stop()
