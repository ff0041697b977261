"""Aggregations: the stream aggregate, the grouped-table aggregate (adder and subtractor), and
the one place ``count`` and ``reduce`` are written as an aggregation.

Every DSL ``count``/``reduce`` (grouped streams, windowed streams, session windows, grouped
tables) is :func:`counting` or :func:`reducing` handed to the same aggregate path, so their
semantics live here once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamrt.runtime.processor import Change, Processor, ProcessorContext, TupleForwarder
from streamrt.runtime.processors.tables import as_change
from streamrt.runtime.windows import record_dropped

__all__ = (
    "AggregateProcessor",
    "Aggregation",
    "Aggregator",
    "Initializer",
    "Merger",
    "TableAggregateProcessor",
    "counting",
    "reducing",
)

Initializer = Callable[[], Any]
Aggregator = Callable[[Any, Any, Any], Any]  # (key, value, aggregate) -> aggregate
Merger = Callable[[Any, Any, Any], Any]  # (key, aggregate, aggregate) -> aggregate

_FIRST = object()  # reduce: "no value yet"; never stored, the first value replaces it


@dataclass(frozen=True, slots=True)
class Aggregation:
    """What an aggregation computes: ``initializer()`` and ``adder(key, value, agg)``; grouped
    tables also take the ``subtractor``, session windows the ``merger`` of two sessions."""

    initializer: Initializer
    adder: Aggregator
    subtractor: Aggregator | None = None
    merger: Merger | None = None


def _plus_one(_key: Any, _value: Any, agg: Any) -> Any:
    return agg + 1


def _minus_one(_key: Any, _value: Any, agg: Any) -> Any:
    return agg - 1


def _sum(_key: Any, left: Any, right: Any) -> Any:
    return left + right


def counting() -> Aggregation:
    """``count``: records per key (sessions add their counts when merged)."""
    return Aggregation(lambda: 0, _plus_one, _minus_one, _sum)


def reducing(
    reducer: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any] | None = None
) -> Aggregation:
    """``reduce``: the first value is the aggregate, then ``reducer(agg, value)``; a grouped
    table's ``subtractor(agg, value)`` removes a value that left the group."""

    def add(_key: Any, value: Any, agg: Any) -> Any:
        return value if agg is _FIRST else reducer(agg, value)

    def merge(_key: Any, left: Any, right: Any) -> Any:
        return right if left is _FIRST else reducer(left, right)

    def subtract(_key: Any, value: Any, agg: Any) -> Any:
        assert subtractor is not None
        return subtractor(agg, value)

    return Aggregation(lambda: _FIRST, add, None if subtractor is None else subtract, merge)


class AggregateProcessor(Processor):
    """``aggregate``/``count``/``reduce``: new = aggregator(key, value, old or initializer()).

    As Kafka Streams' KStreamAggregate/KStreamReduce: a record with a null key or a null value
    is skipped (counted in ``dropped-records``); the result's timestamp is the record's for a
    new aggregate, else the max of the stored aggregate's and the record's."""

    def __init__(
        self,
        store: str,
        initializer: Initializer,
        aggregator: Aggregator,
    ) -> None:
        self.store_name = store
        self.initializer = initializer
        self.aggregator = aggregator

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_store(self.store_name)
        self.forwarder = TupleForwarder(context, self.store_name)

    def process(self, key: Any, value: Any) -> None:
        if key is None or value is None:
            record_dropped(self.context, "skipping a record with a null key or value")
            return
        ts = self.context.timestamp
        stored = self.store.get_with_timestamp(key)
        if stored is None:
            old, new_ts = None, ts
            agg = self.initializer()
        else:
            old, new_ts = stored.value, max(ts, stored.timestamp)
            agg = old
        new = self.aggregator(key, value, agg)
        self.store.put(key, new, new_ts)
        # children that are not tables get ``new``; a cached store forwards on flush
        self.forwarder.maybe_forward(key, new, old, new_ts)


class TableAggregateProcessor(Processor):
    """subtractor(old) if there is an aggregate, then adder(new); stores and forwards.

    As Kafka Streams' KTableAggregate: the result's timestamp is the update's, or the max of
    the stored aggregate's and the update's when the stored aggregate took part."""

    def __init__(
        self,
        store: str,
        initializer: Initializer,
        adder: Aggregator,
        subtractor: Aggregator,
    ) -> None:
        self.store_name = store
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        change = as_change(value)
        store = self.context.get_store(self.store_name)
        stored = store.get_with_timestamp(key)
        old_agg = None if stored is None else stored.value
        ts = self.context.timestamp
        new_ts = ts if stored is None else max(ts, stored.timestamp)
        agg = old_agg
        touched = False  # did the stored aggregate take part (Kafka's timestamp rule)
        if change.old is not None and agg is not None:
            agg, touched = self.subtractor(key, change.old, agg), True
        if change.new is not None:
            agg = self.adder(key, change.new, self.initializer() if agg is None else agg)
            touched = touched or stored is not None
        if not touched:
            new_ts = ts
        if agg is None:
            store.delete(key)
        else:
            store.put(key, agg, new_ts)
        self.context.forward(key, Change(agg, old_agg), timestamp=new_ts)
