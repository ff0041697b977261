"""Closing an aiokafka consumer that aiokafka 0.14 can leave hanging.

Why: aiokafka's fetch routine, after an assignment change, cancels the fetches it had under way
and waits for them inside ``contextlib.suppress(CancelledError)``. A ``stop()`` that lands in
that wait has its cancel of the routine swallowed there, and the routine goes on to wait for
work that never comes: ``stop()`` then waits for it for ever (seen on a restore consumer
stopped right after a restore re-assigned it). A stop still running after ``stuck_after_s`` is
cancelled once more: that cancel reaches the routine, which ends, and the close goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiokafka import AIOKafkaConsumer

__all__ = ("STUCK_STOP_S", "stop_consumer")

logger = logging.getLogger(__name__)

STUCK_STOP_S = 5.0


async def stop_consumer(
    consumer: AIOKafkaConsumer, what: str, stuck_after_s: float = STUCK_STOP_S
) -> None:
    """``consumer.stop()``, its errors raised as they are; a stuck stop is cancelled again."""
    stopping = asyncio.ensure_future(consumer.stop())
    done, _ = await asyncio.wait({stopping}, timeout=stuck_after_s)
    if done:
        stopping.result()
        return
    logger.warning(
        "%s: close still running after %.0f s (aiokafka's fetch routine kept waiting):"
        " cancelling it again",
        what,
        stuck_after_s,
    )
    stopping.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await stopping
