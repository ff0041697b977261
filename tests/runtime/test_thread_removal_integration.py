"""remove_stream_thread() removes the thread's static member at once (LeaveGroup by
group.instance.id), so its partitions move to the remaining thread long before
session.timeout.ms, as Kafka Streams does."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.kafka_helpers import create_topic, wait_until
from tests.rest.instances import group_members
from tests.runtime.counting_app import make_app

SESSION_TIMEOUT_S = 45


def test_removed_threads_partitions_move_well_before_the_session_timeout(
    broker, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "events", 4)
    create_topic(broker.bootstrap, "event-counts-out", 4)
    app = make_app(
        {
            "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path),
            "group.instance.id": "rm",
            "num.stream.threads": "2",
            "session.timeout.ms": str(SESSION_TIMEOUT_S * 1000),
            "heartbeat.interval.ms": "500",
            "commit.interval.ms": "200",
        }
    )
    events: list[dict[str, Any]] = []
    app.on_event(events.append)
    app.start()

    def partitions_of(index: int) -> set[tuple[str, int]]:
        return {
            p
            for t in app.metadata_for_local_threads()
            if t.thread_index == index and t.state.name == "RUNNING"
            for p in t.topic_partitions
            if p[0] == "events"
        }

    try:
        wait_until(lambda: partitions_of(1) and partitions_of(2), what="both threads own tasks")
        started = time.monotonic()
        assert app.remove_stream_thread() == 2
        wait_until(
            lambda: len(partitions_of(1)) == 4,
            timeout=SESSION_TIMEOUT_S / 3,
            what="thread 1 owns every partition",
        )
        moved_after = time.monotonic() - started
        assert moved_after < SESSION_TIMEOUT_S / 3
        assert set(group_members(broker.bootstrap)) == {"rm-thread-1"}
        removed = [e["fields"] for e in events if e["type"] == "member_removed"]
        assert removed == [{"member": "rm-thread-2", "error": None}]
    finally:
        app.stop()
