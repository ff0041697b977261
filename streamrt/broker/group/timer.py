"""Timers for the coordinator core: a ``Timer`` protocol and a deterministic ``ManualTimer``.

Keys name what a timer is for (one helper per kind below); scheduling an existing key replaces
its timer, as Kafka's ``CoordinatorTimer`` does. An op returns the ``Result`` of the expiry,
which the runtime treats exactly like the result of a request.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

from streamrt.broker.coordination.result import Result
from streamrt.clock import ManualClock

__all__ = (
    "ManualTimer",
    "Timer",
    "TimerOp",
    "heartbeat_key",
    "join_key",
    "sync_key",
)

TimerOp = Callable[[], Result]


def heartbeat_key(group_id: str, member_id: str) -> str:
    """Session timer of a member, and expiry of a pending member id (ids never collide)."""
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    """Join-phase timer: rebalance timeout or initial-delay window."""
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"pending-sync-{group_id}"


class Timer(Protocol):
    def schedule(self, key: str, delay_ms: int, op: TimerOp) -> None:
        """Run ``op`` after ``delay_ms``; replaces any timer with the same key."""

    def cancel(self, key: str) -> None: ...

    def is_scheduled(self, key: str) -> bool: ...


class ManualTimer:
    """Fires only on :meth:`poll`, in deadline order, every timer with ``now >= deadline``.

    Mirrors Kafka's ``MockCoordinatorTimer``; an op may schedule further timers, which fire in
    the same poll if they are already due.
    """

    def __init__(self, clock: ManualClock) -> None:
        self._clock = clock
        self._seq = itertools.count()
        self._heap: list[tuple[int, int, str]] = []
        self._live: dict[str, tuple[int, int, TimerOp]] = {}

    def schedule(self, key: str, delay_ms: int, op: TimerOp) -> None:
        deadline = self._clock.now_ms() + delay_ms
        seq = next(self._seq)
        self._live[key] = (deadline, seq, op)
        heapq.heappush(self._heap, (deadline, seq, key))

    def cancel(self, key: str) -> None:
        self._live.pop(key, None)

    def is_scheduled(self, key: str) -> bool:
        return key in self._live

    def deadline(self, key: str) -> int | None:
        entry = self._live.get(key)
        return entry[0] if entry else None

    def next_deadline(self) -> int | None:
        live = [deadline for deadline, _, _ in self._live.values()]
        return min(live, default=None)

    def keys(self) -> set[str]:
        return set(self._live)

    def poll(self) -> list[Result]:
        results: list[Result] = []
        now = self._clock.now_ms()
        while self._heap and self._heap[0][0] <= now:
            _, seq, key = heapq.heappop(self._heap)
            entry = self._live.get(key)
            if entry is None or entry[1] != seq:
                continue  # cancelled or replaced
            del self._live[key]
            results.append(entry[2]())
        return results
