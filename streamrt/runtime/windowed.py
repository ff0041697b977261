"""The windowed part of the DSL: ``KGroupedStream.windowed_by(windows)`` and what follows it.

``windowed_by(TimeWindows | SlidingWindows)`` gives a :class:`TimeWindowedKStream`,
``windowed_by(SessionWindows)`` a :class:`SessionWindowedKStream`; their aggregations
materialize a segmented window/session store (retention: the window's minimum by default)
and return a windowed :class:`KTable` whose keys are :class:`Windowed`.
``emit_strategy="on_window_close"`` is ``.suppress(Suppressed.until_window_closes(unbounded))``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal, Protocol

from streamrt.errors import ConfigError
from streamrt.runtime.processor import Processor
from streamrt.runtime.suppress import BufferConfig, BufferedSerde, Suppressed, SuppressProcessor
from streamrt.runtime.topology import StoreSpec, Topology
from streamrt.runtime.window_aggregate import (
    SessionWindowAggregateProcessor,
    SlidingWindowAggregateProcessor,
    TimeWindowAggregateProcessor,
)
from streamrt.runtime.windows import (
    SessionWindows,
    SlidingWindows,
    TimeWindows,
    Windows,
    check_retention,
)
from streamrt.serde import BytesSerde, IntSerde, Serde, SerdeLike, serde_for
from streamrt.state.store import IN_MEMORY, ROCKS_DB
from streamrt.state.window_store import SegmentSpec

__all__ = ("SessionWindowedKStream", "TimeWindowedKStream", "add_suppress", "windowed_stream")


class KGroupedStream(Protocol):
    """What this module needs of ``dsl.KGroupedStream`` (dsl imports this module, not back)."""

    @property
    def stream(self) -> Any: ...

    def _windowed_aggregate(
        self,
        prefix: str,
        spec: StoreSpec,
        supplier: Callable[[], Processor],
        close_delay_ms: int,
    ) -> Any: ...


KTable = Any  # dsl.KTable, returned as built by the grouped stream

EmitStrategy = Literal["on_window_update", "on_window_close"]
_FIRST = object()  # reduce: "no value yet"


def windowed_stream(
    grouped: KGroupedStream, windows: Windows
) -> TimeWindowedKStream | SessionWindowedKStream:
    if isinstance(windows, SessionWindows):
        return SessionWindowedKStream(grouped, windows)
    if isinstance(windows, TimeWindows | SlidingWindows):
        return TimeWindowedKStream(grouped, windows)
    raise ConfigError(
        f"windowed_by needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r}"
    )


def _emit(strategy: str) -> bool:
    if strategy not in ("on_window_update", "on_window_close"):
        raise ConfigError(
            f"emit_strategy must be 'on_window_update' or 'on_window_close', got {strategy!r}"
        )
    return strategy == "on_window_close"


class _Windowed:
    windows: Windows

    def __init__(self, grouped: KGroupedStream) -> None:
        self.grouped = grouped

    def _materialize(
        self,
        prefix: str,
        store: str,
        value_serde: Serde[Any],
        supplier: Callable[[], Processor],
        in_memory: bool | None,
        retention: int | timedelta | None,
        emit_strategy: str,
        segment_by: Literal["start", "end"],
    ) -> KTable:
        on_close = _emit(emit_strategy)
        ms = check_retention(self.windows, retention)
        kind = None if in_memory is None else (IN_MEMORY if in_memory else ROCKS_DB)
        spec = StoreSpec(
            store,
            self.grouped.stream.key_serde,
            value_serde,
            kind,
            segments=SegmentSpec(ms, segment_by),
        )
        table = self.grouped._windowed_aggregate(
            prefix, spec, supplier, self.windows.close_delay_ms
        )
        if on_close:
            return table.suppress(
                Suppressed.until_window_closes(BufferConfig.unbounded()).with_name(
                    f"{store}-suppress"
                )
            )
        return table


class TimeWindowedKStream(_Windowed):
    """A grouped stream over time (tumbling/hopping) or sliding windows."""

    def __init__(self, grouped: KGroupedStream, windows: TimeWindows | SlidingWindows) -> None:
        super().__init__(grouped)
        self.windows: TimeWindows | SlidingWindows = windows

    def count(
        self,
        store: str,
        *,
        in_memory: bool | None = None,
        retention: int | timedelta | None = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        return self.aggregate(
            lambda: 0,
            lambda _k, _v, agg: agg + 1,
            store=store,
            value_serde=IntSerde(),
            in_memory=in_memory,
            retention=retention,
            emit_strategy=emit_strategy,
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store: str,
        *,
        in_memory: bool | None = None,
        retention: int | timedelta | None = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        return self.aggregate(
            lambda: _FIRST,
            lambda _k, v, agg: v if agg is _FIRST else reducer(agg, v),
            store=store,
            value_serde=self.grouped.stream.value_serde,
            in_memory=in_memory,
            retention=retention,
            emit_strategy=emit_strategy,
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        retention: int | timedelta | None = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        """Aggregate per key and window into the window store ``store`` (queryable).

        ``retention`` (default: size + grace; sliding: 2·difference + grace) must not be
        shorter than that minimum."""
        windows = self.windows
        supplier: Callable[[], Processor]
        if isinstance(windows, SlidingWindows):
            sliding = windows

            def supplier() -> Processor:
                return SlidingWindowAggregateProcessor(store, sliding, initializer, aggregator)

            prefix = "KSTREAM-SLIDINGWINDOWAGGREGATE"
        else:
            timed = windows

            def supplier() -> Processor:
                return TimeWindowAggregateProcessor(store, timed, initializer, aggregator)

            prefix = "KSTREAM-WINDOWED-AGGREGATE"
        return self._materialize(
            prefix,
            store,
            serde_for(value_serde),
            supplier,
            in_memory,
            retention,
            emit_strategy,
            "start",
        )

    @property
    def size_ms(self) -> int:
        w = self.windows
        return w.size_ms if isinstance(w, TimeWindows) else w.time_difference_ms

    @property
    def advance_ms(self) -> int:
        w = self.windows
        return w.advance_ms if isinstance(w, TimeWindows) else 1


class SessionWindowedKStream(_Windowed):
    """A grouped stream over session windows; aggregations also need a ``merger``."""

    def __init__(self, grouped: KGroupedStream, windows: SessionWindows) -> None:
        super().__init__(grouped)
        self.windows: SessionWindows = windows

    def count(
        self,
        store: str,
        *,
        in_memory: bool | None = None,
        retention: int | timedelta | None = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        return self.aggregate(
            lambda: 0,
            lambda _k, _v, agg: agg + 1,
            lambda _k, a, b: a + b,
            store=store,
            value_serde=IntSerde(),
            in_memory=in_memory,
            retention=retention,
            emit_strategy=emit_strategy,
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store: str,
        *,
        in_memory: bool | None = None,
        retention: int | timedelta | None = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        def merge(_k: Any, a: Any, b: Any) -> Any:
            return b if a is _FIRST else reducer(a, b)

        return self.aggregate(
            lambda: _FIRST,
            lambda _k, v, agg: v if agg is _FIRST else reducer(agg, v),
            merge,
            store=store,
            value_serde=self.grouped.stream.value_serde,
            in_memory=in_memory,
            retention=retention,
            emit_strategy=emit_strategy,
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        *,
        store: str,
        value_serde: SerdeLike = "json",
        in_memory: bool | None = None,
        retention: int | timedelta | None = None,
        emit_strategy: EmitStrategy = "on_window_update",
    ) -> KTable:
        """Aggregate per key and session into the session store ``store`` (queryable);
        ``merger(key, agg1, agg2)`` combines two sessions a record bridges."""
        windows = self.windows

        def supplier() -> Processor:
            return SessionWindowAggregateProcessor(store, windows, initializer, aggregator, merger)

        return self._materialize(
            "KSTREAM-SESSIONWINDOWAGGREGATE",
            store,
            serde_for(value_serde),
            supplier,
            in_memory,
            retention,
            emit_strategy,
            "end",
        )


def add_suppress(
    topology: Topology,
    parent: str,
    key_serde: Serde[Any],
    value_serde: Serde[Any],
    close_delay_ms: int | None,
    suppressed: Suppressed,
    what: str,
) -> str:
    """Add a suppress processor (and its buffer store) after ``parent``; returns its node.
    See :mod:`streamrt.runtime.suppress`."""
    if not isinstance(suppressed, Suppressed):
        raise ConfigError(f"suppress needs a Suppressed, got {suppressed!r}")
    if suppressed.until == "window_close" and close_delay_ms is None:
        raise ConfigError(
            f"suppress(until_window_closes) on table {what!r}: window close time is "
            "only defined for windowed computations (windowed_by(...).count/aggregate/reduce)"
        )
    base = suppressed.name or topology.new_name("KTABLE-SUPPRESS-STATE-STORE")
    store = f"{base}-store"
    topology.add_store(
        StoreSpec(store, BytesSerde(), BufferedSerde(value_serde), caching=False)
    )  # the buffer is the cache: every change goes to it and its changelog
    return topology.add_processor(
        topology.new_name("KTABLE-SUPPRESS"),
        lambda: SuppressProcessor(store, key_serde, suppressed, close_delay_ms),
        parent,
        stores=(store,),
    )
