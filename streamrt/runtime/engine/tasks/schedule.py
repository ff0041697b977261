"""A punctuation schedule of one processor in one task (wall-clock or stream time)."""

from __future__ import annotations

from dataclasses import dataclass

from streamrt.runtime.processor import PunctuationType, Punctuator

__all__ = ("Schedule",)


@dataclass(slots=True)
class Schedule:
    """One punctuation schedule; it is also the ``Cancellable`` handed to the processor."""

    interval_ms: int
    punctuator: Punctuator
    kind: PunctuationType = PunctuationType.WALL_CLOCK_TIME
    next_ms: int | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True

    def due(self, now_ms: int) -> bool:
        if self.cancelled:
            return False
        if self.next_ms is None:  # a wall-clock schedule made before the task knew the time
            self.next_ms = now_ms + self.interval_ms
            return False
        return now_ms >= self.next_ms

    def advance(self, now_ms: int) -> None:
        """Next due = last + interval; missed slots are skipped, keeping the alignment."""
        assert self.next_ms is not None
        missed = (now_ms - self.next_ms) // self.interval_ms
        self.next_ms += (missed + 1) * self.interval_ms
