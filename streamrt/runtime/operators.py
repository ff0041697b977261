"""The processors behind the DSL operators (map, filter, aggregate, windows, ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from streamrt.runtime.processor import Processor, ProcessorContext, TupleForwarder, Windowed

__all__ = (
    "AggregateProcessor",
    "BranchProcessor",
    "FilterProcessor",
    "FlatMapProcessor",
    "MapProcessor",
    "MapValuesProcessor",
    "PassThroughProcessor",
    "PeekProcessor",
    "TableSourceProcessor",
    "WindowedAggregateProcessor",
    "windows_for",
)


class PassThroughProcessor(Processor):
    """Forwards every record unchanged (merge, to_stream)."""


class MapProcessor(Processor):
    def __init__(self, fn: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        new_key, new_value = self.fn(key, value)
        self.context.forward(new_key, new_value)


class MapValuesProcessor(Processor):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        self.context.forward(key, self.fn(value))


class FilterProcessor(Processor):
    def __init__(self, predicate: Callable[[Any, Any], bool]) -> None:
        self.predicate = predicate

    def process(self, key: Any, value: Any) -> None:
        if self.predicate(key, value):
            self.context.forward(key, value)


class FlatMapProcessor(Processor):
    def __init__(self, fn: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> None:
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        for new_key, new_value in self.fn(key, value):
            self.context.forward(new_key, new_value)


class PeekProcessor(Processor):
    def __init__(self, action: Callable[[Any, Any], None]) -> None:
        self.action = action

    def process(self, key: Any, value: Any) -> None:
        self.action(key, value)
        self.context.forward(key, value)


class BranchProcessor(Processor):
    """Sends each record to the first branch whose predicate matches (``split``)."""

    def __init__(self, branches: list[tuple[Callable[[Any, Any], bool], str]]) -> None:
        self.branches = branches

    def process(self, key: Any, value: Any) -> None:
        for predicate, child in self.branches:
            if predicate(key, value):
                self.context.forward(key, value, to=child)
                return


class AggregateProcessor(Processor):
    """``aggregate``/``count``/``reduce``: new = aggregator(key, value, old or initializer())."""

    def __init__(
        self,
        store: str,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
    ) -> None:
        self.store_name = store
        self.initializer = initializer
        self.aggregator = aggregator

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_store(self.store_name)
        self.forwarder = TupleForwarder(context, self.store_name)

    def process(self, key: Any, value: Any) -> None:
        if key is None:  # as in Kafka Streams: records with a null key are not aggregated
            return
        old = self.store.get(key)
        new = self.aggregator(key, value, self.initializer() if old is None else old)
        self.store.put(key, new)
        self.forwarder.maybe_forward(key, new)


def windows_for(timestamp: int, size_ms: int, advance_ms: int) -> list[tuple[int, int]]:
    """Every ``[start, end)`` window of a hopping series that contains ``timestamp``.

    Tumbling windows are hopping windows with ``advance_ms == size_ms``.
    """
    first = timestamp - timestamp % advance_ms
    out = []
    start = first
    while start > timestamp - size_ms and start >= 0:
        out.append((start, start + size_ms))
        start -= advance_ms
    return sorted(out)


class WindowedAggregateProcessor(Processor):
    """Aggregates each record into every window holding its timestamp; keys are Windowed."""

    def __init__(
        self,
        store: str,
        size_ms: int,
        advance_ms: int,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
    ) -> None:
        self.store_name = store
        self.size_ms = size_ms
        self.advance_ms = advance_ms
        self.initializer = initializer
        self.aggregator = aggregator

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.forwarder = TupleForwarder(context, self.store_name)

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        store = self.context.get_store(self.store_name)
        for start, end in windows_for(self.context.timestamp, self.size_ms, self.advance_ms):
            window_key = Windowed(key, start, end)
            old = store.get(window_key)
            new = self.aggregator(key, value, self.initializer() if old is None else old)
            store.put(window_key, new)
            self.forwarder.maybe_forward(window_key, new)


class TableSourceProcessor(Processor):
    """Materialises a compacted topic into a store (``app.table``); tombstones delete."""

    def __init__(self, store: str) -> None:
        self.store_name = store

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.forwarder = TupleForwarder(context, self.store_name)

    def process(self, key: Any, value: Any) -> None:
        store = self.context.get_store(self.store_name)
        if value is None:
            store.delete(key)
        else:
            store.put(key, value)
        self.forwarder.maybe_forward(key, value)
