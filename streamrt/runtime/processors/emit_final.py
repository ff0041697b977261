"""KIP-825 emit-final (``emit_strategy="on_window_close"``), as Kafka Streams does it.

A windowed aggregation with this strategy forwards nothing on update. After each record
(Kafka: except null keys, records dropped as too late by a sliding window and sliding
records before ``d``), once its window close time has passed the last emit's, it reads the
windows closed since then from its own window store and forwards each with its aggregate and
aggregate timestamp (sessions: their end), in the order of Kafka's time-ordered store: by
window start (sessions: end, then start), then serialized key bytes. The ranges are Kafka's,
and so is the floor below which the store returns nothing: Kafka's time-ordered window store
reads from ``store time - retention`` (streamrt's from ``+ 1``, so the window store of an
emit-final time or sliding window aggregation gets 1 ms more retention); its time-ordered
session store reads whole live segments.

The last emit's close time lives in a small changelogged store (``<store>-emit-final``), so a
restart neither repeats nor loses a window (Kafka keeps it in the commit's metadata). There
is no wall-clock throttle (Kafka's internal ``emit.interval.ms.kstreams.windowed.aggregation``
is 1 s by default; streamrt behaves as with 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

from streamrt.runtime.processor import ProcessorContext
from streamrt.runtime.stores import ChangeLoggingStore
from streamrt.runtime.window_stores import SessionStoreView, WindowStoreView

__all__ = ("FinalEmitter", "WindowKind", "emit_time_store")

WindowKind = Literal["time", "sliding", "session"]
_LAST = b"last-emit-close-time"


def emit_time_store(store: str) -> str:
    """The name of the store keeping ``store``'s last emit close time."""
    return f"{store}-emit-final"


@dataclass(frozen=True, slots=True)
class _Bounds:
    """Window times (start; sessions: end) to emit, inclusive."""

    lower: int
    upper: int


class FinalEmitter:
    """Emits a windowed aggregation's closed windows from its store (see the module)."""

    def __init__(
        self,
        context: ProcessorContext,
        store: str,
        kind: WindowKind,
        length_ms: int,
        windows_for: Callable[[int], list[tuple[int, int]]] | None = None,
    ) -> None:
        """``length_ms``: the window size (time windows) or time difference (sliding);
        ``windows_for``: time windows' assignment (Kafka skips a fetch that adds none)."""
        self.context = context
        self.view = cast(WindowStoreView | SessionStoreView, context.get_store(store))
        self.times = cast(ChangeLoggingStore, context.get_store(emit_time_store(store)))
        self.kind = kind
        self.length_ms = length_ms
        self.windows_for = windows_for
        self._last: int | None = None
        self._loaded = False

    def last_emit(self) -> int | None:
        if not self._loaded:
            self._last, self._loaded = self.times.get(_LAST), True
        return self._last

    def maybe_emit(self, close: int) -> None:
        """After a record: emit what closed since the last emit, if the close time moved."""
        last = self.last_emit()
        if last is not None and last >= close:
            return
        bounds = self._bounds(close, last)
        if bounds is None:
            return
        for windowed, window in self.view.closed_windows(bounds.lower, bounds.upper):
            ts = window.end if self.kind == "session" else window.timestamp
            self.context.forward(windowed, window.value, timestamp=ts)
        self._last = close
        self.times.put(_LAST, close)

    def _bounds(self, close: int, last: int | None) -> _Bounds | None:
        if self.kind == "session":
            upper, lower = close - 1, max(0, -1 if last is None else last)
            return _Bounds(lower, upper) if upper >= 0 and upper >= lower else None
        if self.kind == "sliding":  # inclusive ends: a window closes once its end < close
            upper = close - self.length_ms - 1
            lower = 0 if last is None else max(0, last - self.length_ms)
            return _Bounds(lower, upper) if upper >= 0 else None
        upper = close - self.length_ms
        if upper < 0:
            return None
        if last is None:
            return _Bounds(0, upper)
        lower = max(0, last - self.length_ms) + 1
        assert self.windows_for is not None
        if self.windows_for(upper) == self.windows_for(lower - 1):
            return None  # no new window closed (Kafka's shouldRangeFetch)
        return _Bounds(lower, upper)
