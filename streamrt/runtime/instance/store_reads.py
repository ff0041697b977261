"""Interactive-query reads as data, so they can run on a stream thread or cross a process.

A read is a small picklable :class:`StoreRead` instead of a closure: in thread mode the query
facade runs it on the owning thread's loop (:func:`read_on_thread`); in process mode the parent
sends it to the child process that owns the task, which runs the same function there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamrt.errors import StreamrtError
from streamrt.runtime.engine.thread.thread import StreamThread, ThreadNotRunningError

__all__ = ("StoreNotReadyError", "StoreRead", "read_on_thread")


class StoreNotReadyError(StreamrtError):
    """The key's task is not open here yet (rebalancing or restoring): ask again shortly."""


@dataclass(frozen=True, slots=True)
class StoreRead:
    """``get(key)`` on a key-value store, or ``fetch(key, time_from, time_to)`` on a window
    or session store."""

    store: str
    key: Any
    time_from: int | None = None
    time_to: int | None = None

    def apply(self, view: Any) -> Any:
        if self.time_from is None or self.time_to is None:
            return view.get(self.key)
        return view.fetch(self.key, self.time_from, self.time_to)


def read_on_thread(thread: StreamThread, task_id: str, read: StoreRead, timeout: float) -> Any:
    """Run ``read`` on the thread's loop under its commit lock, so it never races a task being
    closed or restored. StoreNotReadyError if the task is not open and running there."""

    async def go() -> Any:
        task = thread.running_task(task_id)
        if task is None:
            raise StoreNotReadyError(f"task {task_id} is not running here")
        return read.apply(task.stores[read.store])

    try:
        return thread.run_on_loop(go, timeout)
    except ThreadNotRunningError as exc:
        raise StoreNotReadyError(f"task {task_id}: {exc}") from exc
