"""Cogrouped streams (KIP-150): :class:`CogroupedKStream` and its windowed forms
:class:`TimeWindowedCogroupedKStream` (time and sliding windows) and
:class:`SessionWindowedCogroupedKStream`, as Kafka's.

Several grouped streams, each with its own aggregator, fold into one aggregate per key (and
window) in one store; the graph nodes are in :mod:`.cogroup_nodes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.cogroup_nodes import cogroup_aggregate, windowed_cogroup_aggregate
from streamrt.runtime.dsl.options import removed_positional
from streamrt.runtime.graph.materialized import Materialized, MaterializedLike
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.processors.aggregate import Aggregator, Initializer, Merger
from streamrt.runtime.windows import SessionWindows, SlidingWindows, TimeWindows, Windows
from streamrt.serde import Serde, SerdeLike, serde_for

if TYPE_CHECKING:
    from streamrt.runtime.dsl.streams import KGroupedStream, KTable

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


def _table(node: Any) -> KTable:
    from streamrt.runtime.dsl.streams import KTable  # the API classes refer to one another

    return KTable(node)


class CogroupedKStream:
    """Grouped streams aggregated together into one table, each with its own aggregator
    (Kafka's ``CogroupedKStream``); all must be keyed alike (co-partitioned)."""

    def __init__(self, streams: Inputs) -> None:
        self.streams = streams

    def cogroup(self, grouped: KGroupedStream, aggregator: Aggregator) -> CogroupedKStream:
        return CogroupedKStream([*self.streams, (grouped.stream, aggregator)])

    def aggregate(
        self,
        initializer: Initializer,
        *removed: Any,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        """The aggregate per key in ``store`` (a name or a ``Materialized``; None: an
        internal store); the value serde is ``value_serde``, else the first stream's."""
        removed_positional("CogroupedKStream.aggregate", removed, "store=")
        m, vser = _materialized(self.streams, store, value_serde)
        return _table(cogroup_aggregate(self.streams, initializer, m, vser))

    def windowed_by(
        self, windows: Windows
    ) -> TimeWindowedCogroupedKStream | SessionWindowedCogroupedKStream:
        """Window the cogrouped streams: ``TimeWindows``, ``SlidingWindows`` or
        ``SessionWindows`` (Kafka's ``CogroupedKStream.windowedBy``)."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self.streams, windows)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedCogroupedKStream(self.streams, windows)
        raise ConfigError(
            f"windowed_by needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r}"
        )


class TimeWindowedCogroupedKStream:
    """Cogrouped streams over time (tumbling/hopping) or sliding windows; the table's keys
    are ``Windowed``."""

    def __init__(self, streams: Inputs, windows: TimeWindows | SlidingWindows) -> None:
        self.streams, self.windows = streams, windows

    def aggregate(
        self,
        initializer: Initializer,
        *,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        """The aggregate per key and window in the window store ``store`` (a name or a
        ``Materialized``; None: an internal store)."""
        m, vser = _materialized(self.streams, store, value_serde)
        node = windowed_cogroup_aggregate(self.streams, self.windows, initializer, None, m, vser)
        return _table(node)


class SessionWindowedCogroupedKStream:
    """Cogrouped streams over session windows: ``merger(key, agg1, agg2)`` combines two
    sessions a record bridges."""

    def __init__(self, streams: Inputs, windows: SessionWindows) -> None:
        self.streams, self.windows = streams, windows

    def aggregate(
        self,
        initializer: Initializer,
        merger: Merger,
        *,
        store: MaterializedLike = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        """The aggregate per key and session in the session store ``store``."""
        m, vser = _materialized(self.streams, store, value_serde)
        node = windowed_cogroup_aggregate(self.streams, self.windows, initializer, merger, m, vser)
        return _table(node)
