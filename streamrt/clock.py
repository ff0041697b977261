"""Injected time, so that state machines (the group coordinator, assignors) are testable exactly."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ("Clock", "ManualClock", "SystemClock")


class Clock(Protocol):
    """Milliseconds since the epoch; the only way core code reads time."""

    def now_ms(self) -> int: ...


class SystemClock:
    """Wall-clock time."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when a test says so."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        self._now += ms
        return self._now
