"""Cogrouped streams (KIP-150): :class:`CogroupedKStream` and its windowed forms
:class:`TimeWindowedCogroupedKStream` (time and sliding windows) and
:class:`SessionWindowedCogroupedKStream`, as Kafka's.

Several grouped streams, each with its own aggregator, fold into one aggregate per key (and
window) in one store; the graph nodes are in :mod:`.cogroup_nodes`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.cogroup_nodes import cogroup_aggregate, windowed_cogroup_aggregate
from streamrt.runtime.dsl.options import removed_positional
from streamrt.runtime.graph.materialized import Materialized, MaterializedLike
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.processors.aggregate import Aggregator, Initializer, Merger
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows, Windows
from streamrt.serde import Serde, SerdeLike, serde_for

__all__ = (
    "CogroupedKStream",
    "SessionWindowedCogroupedKStream",
    "TimeWindowedCogroupedKStream",
)

Inputs = list[tuple[StreamNode, Aggregator]]


def _materialized(
    inputs: Inputs, store: MaterializedLike, value_serde: SerdeLike
) -> tuple[Materialized | None, Serde[Any]]:
    """The store (None: an internal one) and value serde of a cogrouped aggregate: the
    serde is ``value_serde``, else the ``Materialized``'s, else the first input's."""
    m = Materialized(store) if isinstance(store, str) else store
    spec = value_serde if value_serde is not None else (m.value_serde if m else None)
    vser = inputs[0][0].value_serde if spec is None else serde_for(spec)
    return (None if m is None else Materialized(m.name, m.key_serde, vser, m.in_memory)), vser


T = TypeVar("T")  # the API table type the aggregations return (``KTable``)
Wrap = Callable[[TableNode], T]


class GroupedLike(Protocol):
    """What ``cogroup`` reads of a ``KGroupedStream``: its grouped stream."""

    @property
    def stream(self) -> StreamNode: ...


class CogroupedKStream(Generic[T]):
    """Grouped streams aggregated together into one table, each with its own aggregator
    (Kafka's ``CogroupedKStream``); all must be keyed alike (co-partitioned)."""

    def __init__(self, streams: Inputs, table: Wrap[T]) -> None:
        self.streams, self._table = streams, table  # ``table`` wraps a result (KTable)

    def cogroup(self, grouped: GroupedLike, aggregator: Aggregator) -> CogroupedKStream[T]:
        return CogroupedKStream([*self.streams, (grouped.stream, aggregator)], self._table)

    def aggregate(
        self,
        initializer: Initializer,
        *removed: Any,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> T:
        """The aggregate per key in ``store`` (a name or a ``Materialized``; None: an
        internal store); the value serde is ``value_serde``, else the first stream's;
        ``name`` names the processors."""
        removed_positional("CogroupedKStream.aggregate", removed, "store=")
        m, vser = _materialized(self.streams, store, value_serde)
        return self._table(cogroup_aggregate(self.streams, initializer, m, vser, name))

    def windowed_by(
        self, windows: Windows
    ) -> TimeWindowedCogroupedKStream[T] | SessionWindowedCogroupedKStream[T]:
        """Window the cogrouped streams: ``TimeWindows``, ``SlidingWindows`` or
        ``SessionWindows`` (Kafka's ``CogroupedKStream.windowedBy``)."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self.streams, windows, self._table)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedCogroupedKStream(self.streams, windows, self._table)
        raise ConfigError(
            f"windowed_by needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r}"
        )


class TimeWindowedCogroupedKStream(Generic[T]):
    """Cogrouped streams over time (tumbling/hopping) or sliding windows; the table's keys
    are ``Windowed``."""

    def __init__(
        self, streams: Inputs, windows: TimeWindows | SlidingWindows, table: Wrap[T]
    ) -> None:
        self.streams, self.windows, self._table = streams, windows, table

    def aggregate(
        self,
        initializer: Initializer,
        *,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> T:
        """The aggregate per key and window in the window store ``store`` (a name or a
        ``Materialized``; None: an internal store)."""
        m, vser = _materialized(self.streams, store, value_serde)
        node = windowed_cogroup_aggregate(self.streams, self.windows, initializer, None, m, vser)
        return self._table(node)


class SessionWindowedCogroupedKStream(Generic[T]):
    """Cogrouped streams over session windows: ``merger(key, agg1, agg2)`` combines two
    sessions a record bridges."""

    def __init__(self, streams: Inputs, windows: SessionWindows, table: Wrap[T]) -> None:
        self.streams, self.windows, self._table = streams, windows, table

    def aggregate(
        self,
        initializer: Initializer,
        merger: Merger,
        *,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> T:
        """The aggregate per key and session in the session store ``store``."""
        m, vser = _materialized(self.streams, store, value_serde)
        node = windowed_cogroup_aggregate(self.streams, self.windows, initializer, merger, m, vser)
        return self._table(node)
