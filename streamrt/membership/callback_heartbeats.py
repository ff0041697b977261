"""Heartbeats while the rebalance callbacks run, as Kafka's consumer sends them from its
heartbeat thread.

Why: the group loop runs the listener's callbacks itself, and a callback can take longer than
the session timeout: an assigned callback that reads the committed offset of a partition whose
previous owner died mid-transaction waits (UNSTABLE_OFFSET_COMMIT) until the broker aborts that
transaction, ~20 s on Apache Kafka. Without heartbeats meanwhile the coordinator removed a live
member (UNKNOWN_MEMBER_ID: its tasks closed dirty and restored elsewhere). Only the answers are
noted here: a rebalance asks for a rejoin; anything else (membership lost, instance fenced) is
handed back to the group loop, which acts on it once the callbacks are done, so no callback
ever runs inside another.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from types import TracebackType

from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import ErrorCode

__all__ = ("CallbackHeartbeats",)


class CallbackHeartbeats:
    """``async with CallbackHeartbeats(...) as beats:`` run callbacks; then act on
    :attr:`error` (the first answer that was neither NONE nor REBALANCE_IN_PROGRESS)."""

    def __init__(
        self,
        send: Callable[[], Awaitable[ErrorCode]],
        interval_s: float,
        rejoin: Callable[[str], None],
    ) -> None:
        self._send = send
        self._interval_s = interval_s
        self._rejoin = rejoin
        self._task: asyncio.Task[None] | None = None
        self.error: ErrorCode | None = None

    async def __aenter__(self) -> CallbackHeartbeats:
        self._task = asyncio.create_task(self._beat(), name="callback-heartbeats")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                code = await self._send()
            except (AdminConnectionError, TimeoutError, OSError):
                continue  # the group loop's next heartbeat finds the coordinator again
            if code == ErrorCode.none:
                continue
            if code == ErrorCode.rebalance_in_progress:
                self._rejoin("the group is rebalancing")
                continue
            self.error = code
            return
