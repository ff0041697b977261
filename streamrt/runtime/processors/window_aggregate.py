"""Windowed aggregation processors: time (tumbling/hopping), sliding and session windows.

Each keeps its own observed stream time (the largest record timestamp it saw, never below
what its store already holds) as Kafka Streams' processors do; ``close = stream time - grace``
decides which windows still accept records. A record that only reaches closed windows is
dropped and counted (``dropped-records``). Output keys are :class:`Windowed`; session
merges first forward a tombstone (value ``None``) for every session they replace. As in Kafka
Streams, a window's result carries the window's aggregate timestamp (the largest record
timestamp in it) and a session's result and tombstones carry the session's end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from streamrt.runtime.processor import Change, Processor, ProcessorContext, Windowed
from streamrt.runtime.processors.aggregate import Aggregator, Initializer, Merger
from streamrt.runtime.processors.emit_final import FinalEmitter, WindowKind
from streamrt.runtime.window_stores import SessionStoreView, TimestampedWindow, WindowStoreView
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows, record_dropped

__all__ = (
    "SessionWindowAggregateProcessor",
    "SlidingWindowAggregateProcessor",
    "TimeWindowAggregateProcessor",
    "WindowAggregateProcessor",
)

_NO_TIME = -(2**63)


class _WindowProcessor(Processor):
    kind: WindowKind

    def __init__(
        self, store: str, grace_ms: int, emit_final: bool, send_old_values: bool = False
    ) -> None:
        self.store_name = store
        self.grace_ms = grace_ms
        self.emit_final = emit_final
        self.send_old_values = send_old_values
        self.observed = _NO_TIME
        self.emitter: FinalEmitter | None = None
        self.store_clock = True  # stream time never below the store's (see sharing_store)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.observed = _NO_TIME
        if self.emit_final:
            self.emitter = self._emitter(context)

    def _emitter(self, context: ProcessorContext) -> FinalEmitter:
        raise NotImplementedError

    def _forward(self, window: Windowed, value: Any, old: Any, timestamp: int) -> None:
        """An update goes downstream at once as ``Change(new, old)``, unless the results are
        emitted final. ``old`` (the window's previous aggregate) is sent only when a downstream
        operator asked for old values (Kafka's ``sendOldValues``: a re-grouping's subtractor
        needs it); children that are not tables get the new value alone."""
        if self.emitter is None:
            sent_old = old if self.send_old_values else None
            self.context.forward(window, Change(value, sent_old), timestamp=timestamp)

    def sharing_store(self) -> _WindowProcessor:
        """One of several processors writing one store (a windowed cogroup): as in Kafka
        Streams, each closes windows by the records *it* saw, while the store still hides
        windows older than its own stream time minus retention."""
        self.store_clock = False
        return self

    def _advance(self, timestamp: int, store_time: int) -> int:
        """Advance stream time with ``timestamp``; returns the close time."""
        shared = store_time if self.store_clock else _NO_TIME
        self.observed = max(self.observed, timestamp, shared)
        return self.observed - self.grace_ms


WindowAggregateProcessor = _WindowProcessor  # what the three have in common, for typing


class TimeWindowAggregateProcessor(_WindowProcessor):
    """Adds each record to every (tumbling/hopping) window holding its timestamp whose end is
    after the close time; the aggregate's timestamp is the largest in the window."""

    def __init__(
        self,
        store: str,
        windows: TimeWindows,
        initializer: Initializer,
        aggregator: Aggregator,
        emit_final: bool = False,
        send_old_values: bool = False,
    ) -> None:
        super().__init__(store, windows.grace_ms, emit_final, send_old_values)
        self.windows = windows
        self.initializer = initializer
        self.aggregator = aggregator

    def _emitter(self, context: ProcessorContext) -> FinalEmitter:
        size = self.windows.size_ms
        return FinalEmitter(context, self.store_name, "time", size, self.windows.windows_for)

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            record_dropped(self.context, "skipping a record with a null key")
            return
        store = cast(WindowStoreView, self.context.get_store(self.store_name))
        ts = self.context.timestamp
        close = self._advance(ts, store.observed_stream_time)
        for start, end in self.windows.windows_for(ts):
            if end <= close:
                record_dropped(
                    self.context,
                    "skipping record for expired window",
                    window_start=start,
                    window_end=end,
                    timestamp=ts,
                    stream_time=self.observed,
                )
                continue
            window = Windowed(key, start, end)
            old = store.get_timestamped(window)
            agg = self.initializer() if old is None else old.value
            new = self.aggregator(key, value, agg)
            stamp = ts if old is None else max(ts, old.timestamp)
            store.put(window, new, stamp)
            self._forward(window, new, None if old is None else old.value, stamp)
        if self.emitter is not None:
            self.emitter.maybe_emit(close)


@dataclass(slots=True)
class _Scan:
    """What a sliding-window record learns from the key's existing windows."""

    starts: set[int] = field(default_factory=set)
    left_agg: TimestampedWindow | None = None
    right_agg: TimestampedWindow | None = None
    left_exists: bool = False
    right_exists: bool = False
    previous: int | None = None  # the latest record before this one in its left window


class SlidingWindowAggregateProcessor(_WindowProcessor):
    """Kafka's sliding-window aggregation (KIP-450): windows ``[start, start + d]``; each record
    gets a left window ending at it and, when later records exist within ``d``, a right window
    starting just after it; existing windows that now hold it are updated."""

    def __init__(
        self,
        store: str,
        windows: SlidingWindows,
        initializer: Initializer,
        aggregator: Aggregator,
        emit_final: bool = False,
        send_old_values: bool = False,
    ) -> None:
        super().__init__(store, windows.grace_ms, emit_final, send_old_values)
        self.d = windows.time_difference_ms
        self.initializer = initializer
        self.aggregator = aggregator

    def _emitter(self, context: ProcessorContext) -> FinalEmitter:
        return FinalEmitter(context, self.store_name, "sliding", self.d)

    def process(self, key: Any, value: Any) -> None:
        if key is None or value is None:
            record_dropped(self.context, "skipping a record with a null key or value")
            return
        store = cast(WindowStoreView, self.context.get_store(self.store_name))
        ts = self.context.timestamp
        close = self._advance(ts, store.observed_stream_time)
        if ts + self.d < close:
            record_dropped(
                self.context,
                "skipping record for expired window",
                timestamp=ts,
                stream_time=self.observed,
            )
            return
        if ts < self.d:  # Kafka emits no final results after an early record
            self._process_early(store, key, value, ts, close)
            return
        self._process_in_order(store, key, value, ts, close)
        if self.emitter is not None:
            self.emitter.maybe_emit(close)

    def _process_in_order(
        self, store: WindowStoreView, key: Any, value: Any, ts: int, close: int
    ) -> None:
        """Kafka's processReverse: the key's windows newest first, so updates go downstream
        in that order; stops at the first window ending before the record."""
        scan = _Scan()
        for w in reversed(store.fetch_timestamped(key, max(0, ts - 2 * self.d), ts + 1)):
            scan.starts.add(w.start)
            end = w.start + self.d
            if w.start == ts + 1:
                scan.right_exists = True
            elif end > ts:
                scan.right_agg = scan.right_agg or w
                self._update(store, key, value, w.start, w, ts, close)
            elif end == ts:
                scan.left_exists = True
                self._update(store, key, value, w.start, w, ts, close)
                if w.timestamp >= ts:
                    return  # Kafka: a record at the same time as the window's latest
                scan.previous = w.timestamp
            else:
                scan.left_agg, scan.previous = w, w.timestamp
                break
        self._create_windows(store, key, value, ts, close, scan)

    def _create_windows(
        self, store: WindowStoreView, key: Any, value: Any, ts: int, close: int, scan: _Scan
    ) -> None:
        """The previous record's right window, the record's left and right windows."""
        previous = scan.previous
        if previous is not None:
            prev_right = previous + 1
            if prev_right not in scan.starts and prev_right + self.d >= ts:
                self._update(store, key, value, prev_right, None, ts, close)
        if not scan.left_exists:
            if previous is not None and scan.left_agg is not None and ts - self.d <= previous:
                base = TimestampedWindow(ts - self.d, ts, scan.left_agg.value, ts)
                self._update(store, key, value, ts - self.d, base, ts, close)
            else:
                self._update(store, key, value, ts - self.d, None, ts, close)
        right = scan.right_agg
        if not scan.right_exists and right is not None and right.timestamp > ts:
            self._create_right_window(store, key, ts, right)

    def _process_early(
        self, store: WindowStoreView, key: Any, value: Any, ts: int, close: int
    ) -> None:
        """``ts < d``: one combined window ``[0, d]`` holds every early record."""
        combined: TimestampedWindow | None = None
        right_agg: TimestampedWindow | None = None
        right_exists = False
        starts: set[int] = set()
        previous: int | None = None
        for w in store.fetch_timestamped(key, 0, ts + 1):
            starts.add(w.start)
            if w.start == 0:
                combined = w
                if w.timestamp < ts:
                    previous = w.timestamp
            elif w.start <= ts:
                right_agg = w
                self._update(store, key, value, w.start, w, ts, close)
            elif w.start == ts + 1:
                right_exists = True
        if right_agg is None and combined is not None and combined.timestamp > ts:
            right_agg = combined
        if not right_exists and right_agg is not None and right_agg.timestamp > ts:
            self._create_right_window(store, key, ts, right_agg)
        if previous is not None and previous + 1 not in starts:
            self._update(store, key, value, previous + 1, None, ts, close)
        self._update(store, key, value, 0, combined, ts, close)

    def _create_right_window(
        self, store: WindowStoreView, key: Any, ts: int, agg: TimestampedWindow
    ) -> None:
        """The record's right window holds exactly the later records: ``agg`` without it."""
        window = Windowed(key, ts + 1, ts + 1 + self.d)
        store.put(window, agg.value, agg.timestamp)
        self._forward(window, agg.value, None, agg.timestamp)

    def _update(
        self,
        store: WindowStoreView,
        key: Any,
        value: Any,
        start: int,
        existing: TimestampedWindow | None,
        ts: int,
        close: int,
    ) -> None:
        end = start + self.d
        if end < close:  # sliding bounds are inclusive: a window ending at close still counts
            record_dropped(
                self.context,
                "skipping record for expired window",
                window_start=start,
                window_end=end,
                timestamp=ts,
                stream_time=self.observed,
            )
            return
        agg = self.initializer() if existing is None else existing.value
        new = self.aggregator(key, value, agg)
        stamp = ts if existing is None else max(ts, existing.timestamp)
        window = Windowed(key, start, end)
        store.put(window, new, stamp)
        # as Kafka: the aggregate the window was built from (a new left window: the earlier one)
        self._forward(window, new, None if existing is None else existing.value, stamp)


class SessionWindowAggregateProcessor(_WindowProcessor):
    """Session windows: the record's session ``[ts, ts]`` merges with every session of the key
    within the inactivity gap; merged sessions are removed (a tombstone is forwarded for each)
    and the merged one is stored and forwarded."""

    def __init__(
        self,
        store: str,
        windows: SessionWindows,
        initializer: Initializer,
        aggregator: Aggregator,
        merger: Merger,
        emit_final: bool = False,
        send_old_values: bool = False,
    ) -> None:
        super().__init__(store, windows.grace_ms, emit_final, send_old_values)
        self.gap = windows.inactivity_gap_ms
        self.initializer = initializer
        self.aggregator = aggregator
        self.merger = merger

    def _emitter(self, context: ProcessorContext) -> FinalEmitter:
        return FinalEmitter(context, self.store_name, "session", self.gap)

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            record_dropped(self.context, "skipping a record with a null key")
            return
        store = cast(SessionStoreView, self.context.get_store(self.store_name))
        ts = self.context.timestamp
        close = self._advance(ts, store.observed_stream_time) - self.gap
        self._merge(store, key, value, ts, close)
        if self.emitter is not None:  # Kafka: also after a record dropped as too late
            self.emitter.maybe_emit(close)

    def _merge(self, store: SessionStoreView, key: Any, value: Any, ts: int, close: int) -> None:
        merged = store.find_sessions(key, ts - self.gap, ts + self.gap)
        agg = self.initializer()
        start, end = ts, ts
        for session in merged:
            agg = self.merger(key, agg, session.value)
            start, end = min(start, session.start), max(end, session.end)
        if end < close:
            record_dropped(
                self.context,
                "skipping record for expired session",
                session_start=start,
                session_end=end,
                timestamp=ts,
                stream_time=self.observed,
            )
            return
        if (start, end) != (ts, ts):  # Kafka: every merged session goes, even one unchanged
            for session in merged:
                old = Windowed(key, session.start, session.end)
                store.remove(old)
                self._forward(old, None, session.value, session.end)
        new = self.aggregator(key, value, agg)
        stamp = max([ts] + [s.timestamp for s in merged])
        window = Windowed(key, start, end)
        store.put(window, new, stamp)
        self._forward(window, new, None, end)  # a session's result carries its end
