"""Coordinator timers on the event loop, and the worker that runs their expiries.

An expiry is enqueued, never run from the loop's callback: the worker takes the coordinator's
lock first, so a timer never races a request (Kafka's ``EventBasedCoordinatorTimer``). An
expiry that was cancelled or re-armed after it fired is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from streamrt.logs import fields

__all__ = ("AsyncioTimer", "TimerWorker")

logger = logging.getLogger(__name__)

Op = Callable[[], Any]


class AsyncioTimer:
    """The coordinators' ``Timer`` on ``loop.call_at``; expiries go to ``enqueue``."""

    def __init__(self, enqueue: Callable[[Op], None]) -> None:
        self._enqueue = enqueue
        self._entries: dict[str, tuple[asyncio.TimerHandle, Op]] = {}

    def schedule(self, key: str, delay_ms: int, op: Op) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()
        handle = loop.call_at(loop.time() + delay_ms / 1000, self._fire, key)
        self._entries[key] = (handle, op)

    def cancel(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry[0].cancel()

    def is_scheduled(self, key: str) -> bool:
        return key in self._entries

    def cancel_all(self) -> None:
        for handle, _ in self._entries.values():
            handle.cancel()
        self._entries.clear()

    def _fire(self, key: str) -> None:
        entry = self._entries.get(key)
        if entry is None:
            return

        def run() -> Any:
            if self._entries.get(key) is not entry:
                return None  # cancelled or re-armed after it fired
            del self._entries[key]
            return entry[1]()

        self._enqueue(run)


class TimerWorker:
    """Runs timer expiries one at a time under ``lock``; owns the :class:`AsyncioTimer`.

    ``handle`` runs an expiry (the op) under the lock and may return a callable to run after
    the lock is released (the transaction coordinator starts its marker writes there).
    ``active`` says whether the coordinator still runs steps (not after stop).
    """

    def __init__(
        self,
        name: str,
        lock: asyncio.Lock,
        handle: Callable[[Op], Awaitable[Callable[[], None] | None]],
        active: Callable[[], bool],
    ) -> None:
        self._name = name
        self._lock = lock
        self._handle = handle
        self._active = active
        self._queue: asyncio.Queue[Op] = asyncio.Queue()
        self.timer = AsyncioTimer(self._queue.put_nowait)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"{self._name}-timers")

    async def stop(self) -> None:
        """Cancel every timer and the worker (the caller already marked itself stopped)."""
        self.timer.cancel_all()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            op = await self._queue.get()
            after = None
            async with self._lock:
                if not self._active():
                    continue
                try:
                    after = await self._handle(op)
                except Exception:
                    logger.exception(
                        "coordinator timer failed", extra=fields(coordinator=self._name)
                    )
            if after is not None:
                after()
