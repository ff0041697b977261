"""The console's pure parts: the timeline from events, the task history, the cluster map."""

from __future__ import annotations

from typing import Any

from streamrt.rest.cluster_view import assemble
from streamrt.rest.task_history import TaskHistory
from streamrt.rest.timeline import summarize
from streamrt.runtime.metadata import ThreadMetadata, ThreadState


def event(ts: float, type_: str, instance: str, pid: int, thread: int | None = 1, **f: Any) -> dict:
    return {
        "ts": ts,
        "type": type_,
        "instance_id": instance,
        "pid": pid,
        "thread": thread,
        "thread_id": None if thread is None else f"{instance}-thread-{thread}",
        "fields": f,
    }


def test_timeline_rebalances_moves_restarts_and_gaps() -> None:
    commits = [
        event(t, "commit", "a", 1, offsets={"in-0": int(t), "in-1": int(t)})
        for t in (1.0, 2.0, 3.0, 9.0)
    ]
    events = [
        event(0.5, "rebalance_complete", "a", 1, generation=1),
        event(0.6, "assignment", "a", 1, partitions=[["in", 0], ["in", 1]], tasks=[]),
        *commits[:3],
        event(4.0, "rebalance_complete", "a", 1, generation=2),
        event(4.1, "rebalance_complete", "b", 7, generation=2),
        event(4.2, "assignment", "a", 1, partitions=[["in", 0]], tasks=[]),
        event(4.3, "assignment", "b", 7, partitions=[["in", 1]], tasks=[]),
        event(4.4, "rebalance_complete", "a", 1, generation=2),  # a static rejoin: no new entry
        commits[3],
        event(10.0, "handoff_stopping", "b", 7, thread=None, tasks=[]),
        event(11.0, "thread_state", "b", 8, old="CREATED", new="STARTING"),
        event(11.5, "thread_state", "b", 7, old="RUNNING", new="PENDING_SHUTDOWN"),  # the old one
        event(12.0, "restore_complete", "b", 8, task="0_1", records=5, bytes=50, seconds=0.1),
        event(13.5, "app_state", "b", 8, thread=None, old="REBALANCING", new="RUNNING"),
        event(14.0, "member_removed", "a", 1, thread=None, member="a-thread-2", error=None),
    ]
    entries = summarize(events)
    assert [e["type"] for e in entries] == ["member_removed", "restart", "rebalance", "rebalance"]
    removed, restart, second, first = entries
    assert removed["fields"]["member"] == "a-thread-2"
    assert restart["instance_id"] == "b" and (restart["old_pid"], restart["new_pid"]) == (7, 8)
    assert restart["handoff"] is True and restart["ready_s"] == 2.5
    assert restart["restored_records"] == 5
    assert first["generation"] == 1 and first["members"] == ["a-thread-1"] and not first["moved"]
    assert second["generation"] == 2 and second["members"] == ["a-thread-1", "b-thread-1"]
    assert second["joined"] == ["b-thread-1"] and second["left"] == []
    assert second["moved"] == [{"partition": "in-1", "from": "a-thread-1", "to": "b-thread-1"}]
    assert second["gap"] == {"partition": "in-0", "seconds": 6.0}  # commits at 3 and 9
    assert summarize(events, limit=2) == entries[:2]


def thread(name: str, records: dict[str, int], lags: dict[str, int]) -> ThreadMetadata:
    return ThreadMetadata(
        thread_name=name,
        thread_index=1,
        thread_instance_id=name,
        client_id="c",
        state=ThreadState.RUNNING,
        active_tasks=tuple(records),
        restoring_tasks=(),
        topic_partitions=(),
        rebalances=0,
        records_processed=sum(records.values()),
        records_restored=0,
        bytes_restored=0,
        restore_time_ms=0.0,
        task_records=records,
        task_lags=lags,
    )


def test_task_history_samples_on_a_grid_with_rates() -> None:
    now = [100.3]
    threads = [thread("w-thread-1", {"0_0": 10}, {"0_0": 4})]
    history = TaskHistory(lambda: threads, interval_s=2.0, window_s=6.0, clock=lambda: now[0])
    assert history.sample() and not history.sample()  # one sample per grid slot
    now[0] = 102.9
    threads[0] = thread("w-thread-1", {"0_0": 30, "0_1": 5}, {"0_0": 0})
    assert history.sample()
    series = history.series()
    assert series["t"] == [100.0, 102.0]
    first = series["tasks"]["0_0@w-thread-1"]
    assert first["rate"] == [None, 10.0] and first["lag"] == [4, 0]
    assert series["tasks"]["0_1@w-thread-1"]["rate"] == [None, None]
    for t in (104.0, 106.0, 108.0):
        now[0] = t
        history.sample()
    assert history.series()["t"] == [104.0, 106.0, 108.0]  # the window keeps the last 6 s


def test_cluster_map_every_partition_once_and_a_down_instance() -> None:
    up = {
        "instance_id": "a",
        "status": "up",
        "threads": [
            {
                "thread_name": "a-thread-1",
                "tasks": [
                    {"task": "0_0", "role": "active", "lag": 3},
                    {"task": "0_1", "role": "standby", "lag": 9},
                ],
            },
        ],
        "history": {
            "t": [2.0],
            "tasks": {
                "0_0@a-thread-1": {"task": "0_0", "thread": "a-thread-1", "lag": [3], "rate": [1.5]}
            },
        },
    }
    down = {
        "instance_id": "b",
        "status": "down",
        "error": "ConnectError",
        "tasks": ["0_1"],
        "threads": [{"thread_name": "b-thread-1", "state": "UNKNOWN", "tasks": []}],
    }
    view = assemble("app", "a", [up, down])
    assert [c["thread"] for c in view["columns"]] == ["a-thread-1", "b-thread-1", "b?"]
    rows = {r["partition"]: r["cells"] for r in view["rows"]}
    assert rows[0] == {"a-thread-1": [{"task": "0_0", "role": "active", "lag": 3}]}
    assert rows[1]["b?"] == [{"task": "0_1", "role": "unknown", "lag": None}]
    assert rows[1]["a-thread-1"][0]["role"] == "standby"
    assert view["history"] == {
        "t": [2.0],
        "series": [{"label": "0_0 @ a-thread-1", "lag": [3], "rate": [1.5]}],
    }
    assert all("history" not in i for i in view["instances"])
