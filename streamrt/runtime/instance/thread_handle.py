"""ThreadHandle: what the instance needs of one stream thread, whichever way it runs.

A stream thread runs in this process
(:class:`~streamrt.runtime.engine.thread.thread.StreamThread`) or in a child process of its own
(:class:`~streamrt.runtime.instance.process_thread.ProcessStreamThread`,
``stream.thread.mode=process``). The App, its supervisor, hand-off, health and the query facade see
either through this protocol, so none of them asks which kind it has.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Protocol

from streamrt.runtime.engine.assignment.assignor import AssignmentInfo
from streamrt.runtime.metadata import ThreadMetadata, ThreadState

__all__ = ("ThreadHandle",)


class ThreadHandle(Protocol):
    """One stream thread as the instance supervises it (both thread kinds satisfy it)."""

    @property
    def index(self) -> int: ...

    @property
    def name(self) -> str:
        """``<instance id>-thread-<n>``."""

    @property
    def thread_instance_id(self) -> str | None:
        """Its ``group.instance.id`` (static membership), or None."""

    @property
    def state(self) -> ThreadState: ...

    @property
    def error(self) -> BaseException | None:
        """Why it died (None while it runs, or after a clean stop)."""

    @property
    def assignment_info(self) -> AssignmentInfo | None:
        """The newest assignment user data it received (the cluster view)."""

    @property
    def tasks(self) -> Collection[str]:
        """Ids of the active tasks assigned to it."""

    @property
    def committed(self) -> threading.Event:
        """Set once a stopping thread made its final commit (or it ended)."""

    @property
    def stopped_cleanly(self) -> bool:
        """The final commit succeeded."""

    @property
    def alive(self) -> bool: ...

    @property
    def member_id(self) -> str | None:
        """Its member id in the group, once joined."""

    def start(self) -> None: ...

    def stop(self) -> None:
        """Ask it to commit and stop (no LeaveGroup for a static member)."""

    def expect_tasks(self, task_ids: Collection[str]) -> None:
        """A hand-off successor's thread: the tasks to open while it joins (a hint)."""

    def release(self) -> None:
        """Let a thread started held join its group."""

    def wait_ready(self, timeout: float) -> bool:
        """Wait until a held thread is ready to join (or ended); False on timeout."""

    def join(self, timeout: float | None = None) -> None: ...

    def owns(self, task_id: str) -> bool:
        """The task is assigned to it (open, restoring or waiting for its lock)."""

    def metadata(self) -> ThreadMetadata: ...

    def persist_stores(self, timeout: float = 5.0) -> int:
        """Ahead of a hand-off: have the stores write their memory to disk; tasks asked."""
