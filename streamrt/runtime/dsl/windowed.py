"""Windowed grouped streams: :class:`TimeWindowedKStream` (time and sliding windows) and
:class:`SessionWindowedKStream`, as Kafka's; their ``count``/``reduce``/``aggregate`` go to
one windowed aggregate path (:mod:`.aggregate_nodes`) and return a table whose keys are
:class:`~streamrt.runtime.processor.Windowed`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, TypedDict, TypeVar, Unpack

from streamrt.runtime.dsl.aggregate_nodes import (
    EmitStrategy,
    WindowStoreOptions,
    windowed_aggregate,
)
from streamrt.runtime.dsl.options import pick, removed_keywords, removed_positional
from streamrt.runtime.graph.materialized import MaterializedLike, store_argument
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.processors.aggregate import Aggregation, counting, reducing
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows, Windows
from streamrt.serde import IntSerde, SerdeLike

__all__ = ("SessionWindowedKStream", "TimeWindowedKStream", "WindowArgs")

Retention = int | timedelta | None


class WindowArgs(TypedDict, total=False):
    """The keyword options windowed ``count``/``reduce``/``aggregate`` share (each optional):
    the processor's name, the store kind, its retention and when results go downstream."""

    name: str | None
    in_memory: bool | None
    retention: Retention
    emit_strategy: EmitStrategy


T = TypeVar("T")  # the API table type the aggregations return (``KTable``)


class _WindowedKStream(Generic[T]):
    """What time and session windowed streams share: count, reduce and the one windowed
    aggregate path (``aggregate`` differs: sessions also take a merger). ``store`` is a
    name or a ``Materialized`` (None: an internal store); ``retention`` ms or a timedelta."""

    windows: Windows

    def __init__(self, stream: StreamNode, table: Callable[[TableNode], T]) -> None:
        self.stream, self._table = stream, table  # ``table`` wraps a result (KTable)

    def count(
        self, *removed: Any, store: MaterializedLike = None, **options: Unpack[WindowArgs]
    ) -> T:
        removed_positional("count", removed, "store=")
        return self._aggregate(counting(), store, IntSerde(), options)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *removed: Any,
        store: MaterializedLike = None,
        **options: Unpack[WindowArgs],
    ) -> T:
        removed_positional("reduce", removed, "store=")
        return self._aggregate(reducing(reducer), store, None, options)

    def _aggregate(
        self,
        aggregation: Aggregation,
        store: MaterializedLike,
        value_serde: SerdeLike,
        options: WindowArgs,
    ) -> T:
        unknown = set(options) - set(WindowArgs.__annotations__)
        removed_keywords("windowed aggregation", {k: options[k] for k in unknown})  # type: ignore[literal-required]
        m = store_argument(self.stream.topology, store, "KSTREAM-AGGREGATE")
        vser = pick(value_serde, m.value_serde) or self.stream.value_serde
        store_options = WindowStoreOptions(
            pick(options.get("in_memory"), m.in_memory),
            options.get("retention"),
            options.get("emit_strategy", "on_window_update"),
        )
        node = windowed_aggregate(
            self.stream, self.windows, aggregation, m.name, vser, store_options, options.get("name")
        )
        return self._table(node)


class TimeWindowedKStream(_WindowedKStream[T]):
    """A grouped stream over time (tumbling/hopping) or sliding windows."""

    def __init__(
        self,
        stream: StreamNode,
        windows: TimeWindows | SlidingWindows,
        table: Callable[[TableNode], T],
    ) -> None:
        super().__init__(stream, table)
        self.windows: TimeWindows | SlidingWindows = windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *removed: Any,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
        **options: Unpack[WindowArgs],
    ) -> T:
        """Aggregate per key and window into the window store ``store`` (queryable).

        ``retention`` (default: size + grace; sliding: 2·difference + grace) must not be
        shorter than that minimum."""
        removed_positional("aggregate", removed, "store=")
        aggregation = Aggregation(initializer, aggregator)
        return self._aggregate(aggregation, store, value_serde, options)


class SessionWindowedKStream(_WindowedKStream[T]):
    """A grouped stream over session windows; aggregations also need a ``merger``."""

    def __init__(
        self, stream: StreamNode, windows: SessionWindows, table: Callable[[TableNode], T]
    ) -> None:
        super().__init__(stream, table)
        self.windows: SessionWindows = windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        *removed: Any,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
        **options: Unpack[WindowArgs],
    ) -> T:
        """Aggregate per key and session into the session store ``store`` (queryable);
        ``merger(key, agg1, agg2)`` combines two sessions a record bridges."""
        removed_positional("aggregate", removed, "store=")
        aggregation = Aggregation(initializer, aggregator, merger=merger)
        return self._aggregate(aggregation, store, value_serde, options)
