"""Wakeup: lets other threads end the stream thread's waits at once (stop, release).

The stream thread waits in two places: in ``getmany`` for records and, held for a hand-off, for
its release. Both race an :class:`asyncio.Event` that another OS thread sets through the loop,
so a stop request does not wait out a poll timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from streamrt.runtime.engine.main_consumer import MainConsumer
from streamrt.topic_partition import TopicPartition

__all__ = ("Wakeup",)


class Wakeup:
    """One per stream thread; :meth:`bind` on its loop, :meth:`wake` from anywhere."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def bind(self) -> None:
        """On the thread's loop, before anything waits."""
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def wake(self) -> None:
        """From any thread: end the current wait (no-op before bind or after the loop closed)."""
        loop, event = self._loop, self._event
        if loop is not None and event is not None and not loop.is_closed():
            # RuntimeError: the loop closed in between, nothing waits any more
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait for a flag another thread sets (it wakes us; the timeout covers a race)."""
        assert self._event is not None
        while not condition():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), 0.05)
            self._event.clear()

    async def poll(
        self, consumer: MainConsumer, timeout_ms: int, stopping: Callable[[], bool]
    ) -> dict[TopicPartition, list[Any]]:
        """``getmany``, but a wake-up (a stop request) ends the wait at once instead of after
        the timeout.

        Buffered records are taken without waiting; only an empty poll waits, racing the wake-up.
        A cancelled ``getmany`` has drained nothing (it is cancelled at its wait), so no
        record is lost: they stay in the fetcher's buffer.
        """
        batches: dict[TopicPartition, list[Any]] = await consumer.getmany(timeout_ms=0)
        if batches or timeout_ms == 0:
            return batches
        event = self._event
        assert event is not None
        if stopping():
            return {}
        event.clear()
        poll = asyncio.ensure_future(consumer.getmany(timeout_ms=timeout_ms))
        woken = asyncio.ensure_future(event.wait())
        await asyncio.wait((poll, woken), return_when=asyncio.FIRST_COMPLETED)
        woken.cancel()
        if not poll.done():
            poll.cancel()
            await asyncio.wait((poll,))  # let it unwind (ours is not cancelled by this)
            return {}
        batches = poll.result()
        return batches
