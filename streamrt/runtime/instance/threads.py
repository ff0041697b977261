"""The stream threads of one instance, all of one kind: in this process, or a child each.

The App picks the kind once (``stream.thread.mode``) and from then on sees its threads as
:class:`~streamrt.runtime.instance.thread_handle.ThreadHandle`. What differs between the kinds
lives here, each in its own class: how a thread is created and started, whether the threads of
one start are held until all are ready (processes import the app at different speeds, and
should join together: one rebalance), where an interactive query runs, and whose
record-handler counters ``/metrics`` shows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, Protocol, TypeVar

from streamrt.runtime.engine.thread.thread import StreamThread, ThreadEnv
from streamrt.runtime.exception_handlers import ErrorStats
from streamrt.runtime.instance.process_thread import (
    ChildLaunch,
    ChildrenErrorStats,
    ProcessStreamThread,
)
from streamrt.runtime.instance.store_reads import StoreNotReadyError, StoreRead, read_on_thread
from streamrt.runtime.instance.thread_handle import ThreadHandle

__all__ = ("ChildThreads", "LocalThreads", "Threads")

H = TypeVar("H", bound=ThreadHandle)


class Threads(Protocol):
    """What the App holds: its stream threads by index, whichever their kind."""

    @property
    def joins_together(self) -> bool:
        """Threads of one start are held and released together once all are ready."""

    @property
    def by_index(self) -> Mapping[int, ThreadHandle]: ...

    def start_thread(self, index: int, hold: bool) -> ThreadHandle: ...

    def remove(self, index: int) -> ThreadHandle: ...

    def read_store(self, task_id: str, read: StoreRead, timeout: float) -> Any: ...

    def error_stats(self, own: ErrorStats) -> ErrorStats: ...


class _ThreadsOfKind(ABC, Generic[H]):
    """Responsibilities: the threads by index; start one; run a store read on its owner."""

    joins_together = False

    def __init__(self) -> None:
        self.by_index: dict[int, H] = {}  # changed under the App's lock

    def start_thread(self, index: int, hold: bool) -> H:
        """Create thread ``index`` (replacing a dead one with that index) and start it."""
        thread = self._create(index, hold)
        self.by_index[index] = thread
        self._start(thread, hold)
        return thread

    def remove(self, index: int) -> H:
        return self.by_index.pop(index)

    def read_store(self, task_id: str, read: StoreRead, timeout: float) -> Any:
        """Run ``read`` where the key's task runs; StoreNotReadyError if no thread owns it."""
        threads = [t for _i, t in sorted(list(self.by_index.items()))]
        owner = next((t for t in threads if t.owns(task_id)), None)
        if owner is None:
            raise StoreNotReadyError(f"task {task_id} of store {read.store} is not active here")
        return self._read(owner, task_id, read, timeout)

    def error_stats(self, own: ErrorStats) -> ErrorStats:
        """The record-handler counters to report: ``own`` (the App's handlers) by default."""
        return own

    @abstractmethod
    def _create(self, index: int, hold: bool) -> H: ...

    @abstractmethod
    def _start(self, thread: H, hold: bool) -> None: ...

    @abstractmethod
    def _read(self, owner: H, task_id: str, read: StoreRead, timeout: float) -> Any: ...


class LocalThreads(_ThreadsOfKind[StreamThread]):
    """``stream.thread.mode=thread``: OS threads of this process."""

    def __init__(self, env: ThreadEnv) -> None:
        super().__init__()
        self._env = env

    def _create(self, index: int, hold: bool) -> StreamThread:
        return StreamThread(self._env, index, held=hold)

    def _start(self, thread: StreamThread, hold: bool) -> None:
        thread.start()

    def _read(self, owner: StreamThread, task_id: str, read: StoreRead, timeout: float) -> Any:
        return read_on_thread(owner, task_id, read, timeout)


class ChildThreads(_ThreadsOfKind[ProcessStreamThread]):
    """``stream.thread.mode=process``: one child process per stream thread."""

    joins_together = True

    def __init__(self, launch: ChildLaunch) -> None:
        super().__init__()
        self._launch = launch

    def _create(self, index: int, hold: bool) -> ProcessStreamThread:
        return ProcessStreamThread(self._launch, index)

    def _start(self, thread: ProcessStreamThread, hold: bool) -> None:
        thread.start(hold=hold)

    def _read(
        self, owner: ProcessStreamThread, task_id: str, read: StoreRead, timeout: float
    ) -> Any:
        return owner.read_store(task_id, read, timeout)

    def error_stats(self, own: ErrorStats) -> ErrorStats:
        """The children's counters, summed (the App's own handlers never see a record)."""
        return ChildrenErrorStats(lambda: list(self.by_index.values()))
