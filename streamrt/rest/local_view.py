"""This instance as the console sees it: health, threads and their tasks, task history.

``GET /v1/tasks`` answers it; ``GET /v1/cluster`` asks every instance for it. Nothing here is
a secret (no token, no member ids, no client settings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamrt.rest.task_history import TaskHistory
from streamrt.runtime.metadata import ThreadMetadata

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("local_view", "thread_tasks")


def thread_tasks(t: ThreadMetadata) -> dict[str, Any]:
    """One thread with each of its tasks' role (active, restoring, standby), lag and progress."""
    tasks: list[dict[str, Any]] = []
    restoring = set(t.restoring_tasks)
    for task in t.active_tasks:
        entry: dict[str, Any] = {"task": task, "role": "active", "lag": t.task_lags.get(task)}
        if task in restoring:
            done, total = t.restore_progress.get(task, (0, 0))
            entry.update(role="restoring", restored=done, to_restore=total)
        tasks.append(entry)
    for task in t.standby_tasks:
        tasks.append({"task": task, "role": "standby", "lag": t.standby_lags.get(task)})
    return {
        "thread_name": t.thread_name,
        "group_instance_id": t.thread_instance_id,
        "state": t.state.value,
        "rebalances": t.rebalances,
        "records_processed": t.records_processed,
        "records_restored": t.records_restored,
        "tasks": tasks,
    }


def local_view(app: App, history: TaskHistory) -> dict[str, Any]:
    assert app.config is not None
    health = app.health()
    history.sample()
    return {
        "application_id": app.config.application_id,
        "instance_id": app.instance_id,
        "application_server": app.config.application_server,
        "status": "up" if health.healthy else "unhealthy",
        "state": health.state,
        "reason": health.reason,
        "threads": [thread_tasks(t) for t in app.metadata_for_local_threads()],
        "history": history.series(),
    }
