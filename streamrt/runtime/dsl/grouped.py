"""Grouped streams and what they aggregate into: :class:`KGroupedStream` and, after
``windowed_by``, :class:`TimeWindowedKStream` (time or sliding windows) and
:class:`SessionWindowedKStream`.

``count``/``reduce``/``aggregate`` all become one :class:`Aggregation` handed to one builder
per grouping (:mod:`.aggregate_nodes`); windowed aggregations materialize a segmented
window/session store (retention: the windows' minimum by default) and return a windowed
:class:`KTable` whose keys are :class:`~streamrt.runtime.processor.Windowed`.
``emit_strategy="on_window_close"`` is ``.suppress(Suppressed.until_window_closes(unbounded))``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.aggregate_nodes import EmitStrategy, aggregate_stream, windowed_aggregate
from streamrt.runtime.dsl.table import KTable
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.processors.aggregate import Aggregation, counting, reducing
from streamrt.runtime.windows import (
    DEFAULT_LEGACY_GRACE_MS,
    SessionWindows,
    SlidingWindows,
    TimeWindows,
    Windows,
)
from streamrt.serde import IntSerde, SerdeLike

__all__ = ("KGroupedStream", "SessionWindowedKStream", "TimeWindowedKStream")

Retention = int | timedelta | None


class KGroupedStream:
    """A stream grouped by key, ready for an aggregation into a named store."""

    def __init__(self, stream: StreamNode) -> None:
        self.stream = stream

    def count(self, store: str, *, in_memory: bool | None = None, caching: bool = True) -> KTable:
        return self._aggregate(counting(), store, IntSerde(), in_memory, caching)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store: str,
        *,
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        value_serde = self.stream.value_serde
        return self._aggregate(reducing(reducer), store, value_serde, in_memory, caching)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        """``in_memory`` picks the store kind (None: the ``default.dsl.store`` config);
        ``caching=False`` sends every update downstream (no record cache for this store)."""
        aggregation = Aggregation(initializer, aggregator)
        return self._aggregate(aggregation, store, value_serde, in_memory, caching)

    def _aggregate(
        self,
        aggregation: Aggregation,
        store: str,
        value_serde: SerdeLike,
        in_memory: bool | None,
        caching: bool,
    ) -> KTable:
        return KTable(
            aggregate_stream(self.stream, aggregation, store, value_serde, in_memory, caching)
        )

    def windowed_by(
        self,
        windows: Windows | int | None = None,
        advance_ms: int | None = None,
        *,
        size_ms: int | None = None,
    ) -> TimeWindowedKStream | SessionWindowedKStream:
        """Window the grouped stream: ``TimeWindows`` (tumbling/hopping), ``SlidingWindows``
        or ``SessionWindows``. The legacy ``windowed_by(size_ms, advance_ms)`` means
        ``TimeWindows`` with Kafka's old default grace (24 h minus the size)."""
        windows = _windows(windows, advance_ms, size_ms)
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self.stream, windows)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedKStream(self.stream, windows)
        raise ConfigError(
            f"windowed_by needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r}"
        )


def _windows(windows: Windows | int | None, advance_ms: int | None, size_ms: int | None) -> Windows:
    """The windows ``windowed_by`` was given, or the legacy size/advance as TimeWindows."""
    if windows is None:
        if size_ms is None:
            raise ConfigError("windowed_by needs windows (TimeWindows, ...) or size_ms")
        windows = size_ms
    if isinstance(windows, bool):
        raise ConfigError(f"windowed_by needs windows, got {windows!r}")
    if isinstance(windows, int):
        size = windows
        if size <= 0:
            raise ConfigError(f"window size must be positive, got {size} ms")
        grace = max(DEFAULT_LEGACY_GRACE_MS - size, 0)
        advance = size if advance_ms is None else advance_ms
        return TimeWindows.of_size_and_grace(size, grace).advance_by(advance)
    if advance_ms is not None:
        raise ConfigError("advance_ms goes with a size in ms; use TimeWindows.advance_by")
    return windows


class _WindowedKStream:
    """What time and session windowed streams share: count, reduce and the one windowed
    aggregate path (``aggregate`` differs: sessions also take a merger)."""

    windows: Windows

    def __init__(self, stream: StreamNode) -> None:
        self.stream = stream

    def count(
        self,
        store: str,
        *,
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        options = (in_memory, retention, emit_strategy)
        return self._aggregate(counting(), store, IntSerde(), options)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store: str,
        *,
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        options = (in_memory, retention, emit_strategy)
        return self._aggregate(reducing(reducer), store, self.stream.value_serde, options)

    def _aggregate(
        self,
        aggregation: Aggregation,
        store: str,
        value_serde: SerdeLike,
        options: tuple[bool | None, Retention, EmitStrategy],
    ) -> KTable:
        """``options``: (in_memory, retention, emit_strategy)."""
        return KTable(
            windowed_aggregate(self.stream, self.windows, aggregation, store, value_serde, options)
        )


class TimeWindowedKStream(_WindowedKStream):
    """A grouped stream over time (tumbling/hopping) or sliding windows."""

    def __init__(self, stream: StreamNode, windows: TimeWindows | SlidingWindows) -> None:
        super().__init__(stream)
        self.windows: TimeWindows | SlidingWindows = windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        """Aggregate per key and window into the window store ``store`` (queryable).

        ``retention`` (default: size + grace; sliding: 2·difference + grace) must not be
        shorter than that minimum."""
        options = (in_memory, retention, emit_strategy)
        return self._aggregate(Aggregation(initializer, aggregator), store, value_serde, options)

    @property
    def size_ms(self) -> int:
        w = self.windows
        return w.size_ms if isinstance(w, TimeWindows) else w.time_difference_ms

    @property
    def advance_ms(self) -> int:
        w = self.windows
        return w.advance_ms if isinstance(w, TimeWindows) else 1


class SessionWindowedKStream(_WindowedKStream):
    """A grouped stream over session windows; aggregations also need a ``merger``."""

    def __init__(self, stream: StreamNode, windows: SessionWindows) -> None:
        super().__init__(stream)
        self.windows: SessionWindows = windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        retention: Retention = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        """Aggregate per key and session into the session store ``store`` (queryable);
        ``merger(key, agg1, agg2)`` combines two sessions a record bridges."""
        aggregation = Aggregation(initializer, aggregator, merger=merger)
        options = (in_memory, retention, emit_strategy)
        return self._aggregate(aggregation, store, value_serde, options)
