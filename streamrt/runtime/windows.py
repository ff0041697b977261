"""Window definitions with Kafka Streams semantics: time (tumbling/hopping), sliding, session.

Every definition carries its grace period: a record is accepted into a window until stream
time (the largest record timestamp seen) passes the window's end plus grace; after that the
window is *closed*, later records for it are dropped (``dropped-records``) and
``suppress(until_window_closes)`` emits its final result. Times are milliseconds; a
``datetime.timedelta`` is accepted too. Bad values raise :class:`ConfigError` when the
definition is built.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from streamrt.errors import ConfigError
from streamrt.logs import fields

__all__ = (
    "DEFAULT_LEGACY_GRACE_MS",
    "SessionWindows",
    "SlidingWindows",
    "TimeWindows",
    "Windows",
    "record_dropped",
    "to_ms",
)

logger = logging.getLogger(__name__)

DEFAULT_LEGACY_GRACE_MS = 24 * 3600 * 1000  # Kafka's deprecated ``of(size)``: 24 h minus size


def to_ms(value: int | timedelta, what: str) -> int:
    """Milliseconds from an int or a timedelta; refuses bools and other types."""
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} must be milliseconds (int) or a timedelta, got {value!r}")
    return value


def _positive(value: int | timedelta, what: str) -> int:
    ms = to_ms(value, what)
    if ms <= 0:
        raise ConfigError(f"{what} must be positive, got {ms} ms")
    return ms


def _grace(value: int | timedelta) -> int:
    ms = to_ms(value, "grace period")
    if ms < 0:
        raise ConfigError(f"grace period must not be negative, got {ms} ms")
    return ms


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """Fixed-size windows ``[start, end)`` aligned to the epoch: tumbling when
    ``advance_ms == size_ms``, hopping (overlapping) when ``advance_ms < size_ms``."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @classmethod
    def of_size_with_no_grace(cls, size: int | timedelta) -> TimeWindows:
        ms = _positive(size, "window size")
        return cls(ms, ms, 0)

    @classmethod
    def of_size_and_grace(cls, size: int | timedelta, grace: int | timedelta) -> TimeWindows:
        ms = _positive(size, "window size")
        return cls(ms, ms, _grace(grace))

    def advance_by(self, advance: int | timedelta) -> TimeWindows:
        ms = to_ms(advance, "window advance")
        if not 0 < ms <= self.size_ms:
            raise ConfigError(f"window advance must be in (0, size={self.size_ms}] ms, got {ms} ms")
        return TimeWindows(self.size_ms, ms, self.grace_ms)

    def windows_for(self, timestamp: int) -> list[tuple[int, int]]:
        """Every window ``(start, end)`` holding ``timestamp``, ascending by start."""
        start = max(0, timestamp - self.size_ms + self.advance_ms) // self.advance_ms
        start *= self.advance_ms
        out = []
        while start <= timestamp:
            out.append((start, start + self.size_ms))
            start += self.advance_ms
        return out

    @property
    def min_retention_ms(self) -> int:
        return self.size_ms + self.grace_ms

    @property
    def close_delay_ms(self) -> int:
        """How long after a window's end it closes (``suppress`` waits this long)."""
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """Windows ``[start, end]`` (both inclusive) of ``time_difference_ms`` that slide with the
    records (KIP-450): each distinct set of records no further apart than the difference gets
    one window, created when a record arrives or leaves."""

    time_difference_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, difference: int | timedelta) -> SlidingWindows:
        return cls(_positive(difference, "sliding window time difference"), 0)

    @classmethod
    def of_time_difference_and_grace(
        cls, difference: int | timedelta, grace: int | timedelta
    ) -> SlidingWindows:
        return cls(_positive(difference, "sliding window time difference"), _grace(grace))

    @property
    def min_retention_ms(self) -> int:
        return 2 * self.time_difference_ms + self.grace_ms

    @property
    def close_delay_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """Per-key sessions ``[first, last]`` record timestamps: a record within
    ``inactivity_gap_ms`` of a session joins it; one that bridges two sessions merges them."""

    inactivity_gap_ms: int
    grace_ms: int

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, gap: int | timedelta) -> SessionWindows:
        return cls(_positive(gap, "session inactivity gap"), 0)

    @classmethod
    def of_inactivity_gap_and_grace(
        cls, gap: int | timedelta, grace: int | timedelta
    ) -> SessionWindows:
        return cls(_positive(gap, "session inactivity gap"), _grace(grace))

    @property
    def min_retention_ms(self) -> int:
        return self.inactivity_gap_ms + self.grace_ms

    @property
    def close_delay_ms(self) -> int:
        """A session ending at ``end`` can still grow until ``end + gap``, then grace."""
        return self.grace_ms + self.inactivity_gap_ms


Windows = TimeWindows | SlidingWindows | SessionWindows


def check_retention(windows: Windows, retention: int | timedelta | None) -> int:
    """The store retention: the minimum (size + grace, ...) by default; a smaller explicit
    value is refused as Kafka Streams does."""
    minimum = windows.min_retention_ms
    if retention is None:
        return minimum
    ms = to_ms(retention, "retention")
    if ms < minimum:
        raise ConfigError(
            f"retention {ms} ms is shorter than the window's minimum {minimum} ms "
            f"(grace {windows.grace_ms} ms plus the window size/gap): records could be "
            "dropped from the store before their window closes"
        )
    return ms


def record_dropped(context: Any, reason: str, **info: Any) -> None:
    """Skip a record on purpose: WARN and count it in the task's ``dropped-records``."""
    logger.warning(
        reason,
        extra=fields(task=getattr(context, "task_id", None), metric="dropped-records", **info),
    )
    counter = getattr(context, "record_dropped", None)
    if counter is not None:
        counter()
