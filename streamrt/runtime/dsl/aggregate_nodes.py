"""The graph nodes of stream aggregations: by key, by time/sliding/session window, and the
``suppress`` that can follow a windowed one.

Every ``count``/``reduce``/``aggregate`` of the API arrives here as an :class:`Aggregation`
(see :mod:`streamrt.runtime.processors.aggregate`), so there is one path per kind of grouping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from streamrt.errors import ConfigError
from streamrt.runtime.graph.materialized import store_kind
from streamrt.runtime.graph.nodes import StreamNode, TableNode
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.graph.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors.aggregate import AggregateProcessor, Aggregation
from streamrt.runtime.processors.emit_final import emit_time_store
from streamrt.runtime.processors.suppress import (
    BufferedSerde,
    Suppressed,
    SuppressProcessor,
    stream_time_store,
)
from streamrt.runtime.processors.window_aggregate import (
    SessionWindowAggregateProcessor,
    SlidingWindowAggregateProcessor,
    TimeWindowAggregateProcessor,
    WindowAggregateProcessor,
)
from streamrt.runtime.stores import StoreSpec
from streamrt.runtime.windows import (
    SessionWindows,
    SlidingWindows,
    Windows,
    check_retention,
)
from streamrt.serde import BytesSerde, IntSerde, Serde, SerdeLike, serde_for
from streamrt.state.window_store import SegmentSpec

__all__ = (
    "EmitStrategy",
    "WindowStoreOptions",
    "add_window_store",
    "aggregate_stream",
    "suppress_table",
    "window_processor",
    "windowed_aggregate",
    "windowed_key_serde",
)

EmitStrategy = Literal["on_window_update", "on_window_close"]


@dataclass(frozen=True, slots=True)
class WindowStoreOptions:
    """How a windowed aggregation stores and emits: the store kind (None: the
    ``default.dsl.store`` config), its retention (None: the windows' minimum) and when
    results go downstream (``on_window_close``: KIP-825's emit-final from the window store)."""

    in_memory: bool | None = None
    retention: int | timedelta | None = None
    emit_strategy: EmitStrategy = "on_window_update"


def aggregate_stream(
    stream: StreamNode,
    aggregation: Aggregation,
    store: str,
    value_serde: SerdeLike,
    in_memory: bool | None,
    caching: bool,
    name: str | None = None,
) -> TableNode:
    """``new = adder(key, value, old or initializer())`` per key, into the store ``store``;
    ``name`` names the processor."""
    topology = stream.topology
    vser = serde_for(value_serde)
    spec = StoreSpec(
        store, stream.key_serde, vser, store_kind(in_memory), caching, timestamped=True
    )
    topology.add_store(spec)
    node = topology.add_processor(
        name or topology.new_name("KSTREAM-AGGREGATE"),
        lambda: AggregateProcessor(store, aggregation.initializer, aggregation.adder),
        stream.name,
        stores=(store,),
    )
    return TableNode.stored(topology, node, store, stream.key_serde, vser)


def window_processor(
    windows: Windows,
    store: str,
    aggregation: Aggregation,
    final: bool,
    send_old: Callable[[], bool],
    sharing: bool = False,
) -> tuple[str, Callable[[], Processor]]:
    """The processor (and its name prefix) aggregating into ``windows``; ``send_old()`` (asked
    when a task builds the processor, once the whole topology is known) says whether a
    downstream operator needs the old values; ``sharing``: one of a cogroup's processors
    writing the one store (see ``WindowAggregateProcessor.sharing_store``)."""
    init, add = aggregation.initializer, aggregation.adder

    def built(processor: WindowAggregateProcessor) -> Processor:
        return processor.sharing_store() if sharing else processor

    if isinstance(windows, SessionWindows):
        merger = aggregation.merger
        if merger is None:
            raise ConfigError("a session window aggregation needs a merger")
        return "KSTREAM-SESSIONWINDOWAGGREGATE", lambda: built(
            SessionWindowAggregateProcessor(store, windows, init, add, merger, final, send_old())
        )
    if isinstance(windows, SlidingWindows):
        return "KSTREAM-SLIDINGWINDOWAGGREGATE", lambda: built(
            SlidingWindowAggregateProcessor(store, windows, init, add, final, send_old())
        )
    return "KSTREAM-WINDOWED-AGGREGATE", lambda: built(
        TimeWindowAggregateProcessor(store, windows, init, add, final, send_old())
    )


def windowed_key_serde(
    windows: Windows, inner: Serde[Any]
) -> TimeWindowedSerde | SessionWindowedSerde:
    """The key serde of a windowed aggregation's table, as Kafka's: time and sliding windows
    write the start only and read the end back with the window size (a sliding window's is
    its time difference); sessions write end and start."""
    if isinstance(windows, SessionWindows):
        return SessionWindowedSerde(inner)
    if isinstance(windows, SlidingWindows):
        return TimeWindowedSerde(inner, windows.time_difference_ms)
    return TimeWindowedSerde(inner, windows.size_ms)


def _on_window_close(strategy: str) -> bool:
    if strategy not in ("on_window_update", "on_window_close"):
        raise ConfigError(
            f"emit_strategy must be 'on_window_update' or 'on_window_close', got {strategy!r}"
        )
    return strategy == "on_window_close"


def windowed_aggregate(
    stream: StreamNode,
    windows: Windows,
    aggregation: Aggregation,
    store: str,
    value_serde: SerdeLike,
    options: WindowStoreOptions,
    name: str | None = None,
) -> TableNode:
    """Aggregate per key and window into a segmented window/session store ``store``
    (retention: the windows' minimum by default); the table's keys are Windowed. Emitting
    on window close (KIP-825) reads closed windows from the store; the last emit time is
    kept in the store ``<store>-emit-final``."""
    on_close = _on_window_close(options.emit_strategy)
    topology = stream.topology
    names: list[str] = []  # the node's name, known once its prefix is
    prefix, supplier = window_processor(
        windows, store, aggregation, on_close, lambda: topology.sends_old_values(names[0])
    )
    vser = serde_for(value_serde)
    stores = add_window_store(topology, windows, store, stream.key_serde, vser, options)
    names.append(name or topology.new_name(prefix))
    node = topology.add_processor(names[0], supplier, stream.name, stores=stores)
    return TableNode.stored(
        topology,
        node,
        store,
        windowed_key_serde(windows, stream.key_serde),
        vser,
        window_close_delay_ms=windows.close_delay_ms,
    )


def add_window_store(
    topology: Topology,
    windows: Windows,
    store: str,
    key_serde: Serde[Any],
    value_serde: Serde[Any],
    options: WindowStoreOptions,
) -> tuple[str, ...]:
    """Register the segmented window/session store of a windowed aggregation (and, emitting
    on window close, its emit-time store); the names of the stores its processors use."""
    on_close = _on_window_close(options.emit_strategy)
    ms = check_retention(windows, options.retention)
    segment_by: Literal["start", "end"] = "end" if isinstance(windows, SessionWindows) else "start"
    if on_close and segment_by == "start":
        ms += 1  # Kafka's time-ordered window store returns windows from time - retention
    spec = StoreSpec(
        store,
        key_serde,
        value_serde,
        store_kind(options.in_memory),
        segments=SegmentSpec(ms, segment_by),
    )
    topology.add_store(spec)
    stores: tuple[str, ...] = (spec.name,)
    if on_close:
        times = StoreSpec(emit_time_store(store), BytesSerde(), IntSerde(), caching=False)
        topology.add_store(times)
        stores += (times.name,)
    return stores


def suppress_table(table: TableNode, suppressed: Suppressed) -> TableNode:
    """A suppress processor (and its buffer store) after ``table``; reads still go to the
    table's store. See :mod:`streamrt.runtime.processors.suppress`."""
    if not isinstance(suppressed, Suppressed):
        raise ConfigError(f"suppress needs a Suppressed, got {suppressed!r}")
    close_delay_ms = table.window_close_delay_ms
    if suppressed.until == "window_close" and close_delay_ms is None:
        raise ConfigError(
            f"suppress(until_window_closes) on table {table.store or table.name!r}: window "
            "close time is only defined for windowed computations "
            "(windowed_by(...).count/aggregate/reduce)"
        )
    topology = table.topology
    topology.request_old_values(table.name)  # as Kafka's KTableSuppressProcessorSupplier
    base = suppressed.name or topology.new_name("KTABLE-SUPPRESS-STATE-STORE")
    store = f"{base}-store"
    topology.add_store(
        StoreSpec(store, BytesSerde(), BufferedSerde(table.value_serde), caching=False)
    )  # the buffer is the cache: every change goes to it and its changelog
    clock = StoreSpec(stream_time_store(store), BytesSerde(), IntSerde(), caching=False)
    topology.add_store(clock)  # its stream time, for a reopened or restored task
    key_serde = table.key_serde
    node = topology.add_processor(
        topology.new_name("KTABLE-SUPPRESS"),
        lambda: SuppressProcessor(store, key_serde, suppressed, close_delay_ms),
        table.name,
        stores=(store, clock.name),
        accepts_changes=True,  # buffers Change(new, old): emits Change(last, prior)
    )
    return TableNode(
        topology,
        node,
        table.store,
        table.key_serde,
        table.value_serde,
        table.getter,
        table.window_close_delay_ms,
    )
