"""The DSL users call, as Kafka Streams' ``kstream``: :class:`StreamsBuilder`, :class:`KStream`,
:class:`KTable`, grouped and windowed streams, :class:`GlobalKTable`, and their arguments.

Layout: the API classes (``builder``, ``streams`` with the operators they inherit from
``stream_ops`` and ``table_ops``, ``global_table``) wrap graph handles; the ``*_nodes`` modules
add the operators' processors (from ``runtime.processors``) to the graph (``runtime.graph``).
"""

from streamrt.runtime.dsl.branched import BranchedKStream
from streamrt.runtime.dsl.builder import StreamsBuilder
from streamrt.runtime.dsl.cogrouped import (
    CogroupedKStream,
    SessionWindowedCogroupedKStream,
    TimeWindowedCogroupedKStream,
)
from streamrt.runtime.dsl.global_table import GlobalKTable
from streamrt.runtime.dsl.options import (
    Branched,
    Consumed,
    Grouped,
    Joined,
    Produced,
    Repartitioned,
    StreamJoined,
    TableJoined,
)
from streamrt.runtime.dsl.stream_ops import ValueMapperWithKey
from streamrt.runtime.dsl.streams import (
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    SessionWindowedKStream,
    TimeWindowedKStream,
)
from streamrt.runtime.graph.materialized import Materialized
from streamrt.runtime.graph.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde
from streamrt.runtime.processors.join_windows import JoinWindows, ValueJoinerWithKey
from streamrt.runtime.processors.suppress import BufferConfig, BufferFullError, Suppressed
from streamrt.runtime.processors.transform_values import ValueTransformerWithKey

__all__ = (
    "Branched",
    "BranchedKStream",
    "BufferConfig",
    "BufferFullError",
    "CogroupedKStream",
    "Consumed",
    "GlobalKTable",
    "Grouped",
    "JoinWindows",
    "Joined",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "Materialized",
    "Produced",
    "Repartitioned",
    "SessionWindowedCogroupedKStream",
    "SessionWindowedKStream",
    "SessionWindowedSerde",
    "StreamJoined",
    "StreamsBuilder",
    "Suppressed",
    "TableJoined",
    "TimeWindowedCogroupedKStream",
    "TimeWindowedKStream",
    "TimeWindowedSerde",
    "ValueJoinerWithKey",
    "ValueMapperWithKey",
    "ValueTransformerWithKey",
)


def __getattr__(name: str) -> object:
    """Removed names fail with their replacement (issue 38: old spellings go)."""
    if name == "WindowedSerde":
        raise AttributeError(
            "WindowedSerde is gone: windowed keys are written as Kafka Streams writes them; use "
            "TimeWindowedSerde(inner, window_size_ms) for time and sliding windows or "
            "SessionWindowedSerde(inner) for session windows (streamrt.runtime.dsl)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
