"""The handles the DSL builds on and its API objects wrap: a stream or a table in the graph.

A :class:`StreamNode` is a node of the topology whose records form a stream, with their serdes;
a :class:`TableNode` adds how to read the table by key (its store, or a :class:`ValueGetter`
recomputing from its parent's store, as Kafka Streams' value getters). The functions that add
operators take and return these handles, never the API classes, so nothing below the API
imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from streamrt.runtime.graph.topology import REPARTITION_SUFFIX, StreamPartitioner, Topology
from streamrt.runtime.processor import Processor, ProcessorContext, ValueAndTimestamp
from streamrt.serde import Serde

__all__ = (
    "NullKeyFilter",
    "StreamNode",
    "TableNode",
    "TimedGet",
    "ValueGetter",
    "no_getter",
    "store_getter",
)


class NullKeyFilter(Processor):
    """Drops records with a null key before a repartition topic's sink: graph plumbing, like
    the sink itself (Kafka adds the same filter in ``createRepartitionedSource``)."""

    def process(self, key: Any, value: Any) -> None:
        if key is not None:
            self.context.forward(key, value)


TimedGet = Callable[[Any], ValueAndTimestamp | None]


@dataclass(frozen=True, slots=True)
class ValueGetter:
    """How a processor reads a table by key: the stores it needs in its task, and a factory
    of ``get(key) -> ValueAndTimestamp | None`` given the processor's context (Kafka's
    ``KTableValueGetter``: table joins need the other row's timestamp)."""

    stores: tuple[str, ...]
    make_timed: Callable[[ProcessorContext], TimedGet]

    def make(self, ctx: ProcessorContext) -> Callable[[Any], Any]:
        """``get(key)``: the value only."""
        timed = self.make_timed(ctx)

        def get(key: Any) -> Any:
            found = timed(key)
            return None if found is None else found.value

        return get


def _timed_store_get(ctx: ProcessorContext, store: str) -> TimedGet:
    """The store's rows with their timestamps; a store without them (a windowed one)
    answers ``NO_TIMESTAMP`` (-1), as Kafka's plain stores."""
    view = ctx.get_store(store)
    with_ts = getattr(view, "get_with_timestamp", None)
    if with_ts is not None:
        return with_ts  # type: ignore[no-any-return]

    def get(key: Any) -> ValueAndTimestamp | None:
        value = view.get(key)
        return None if value is None else ValueAndTimestamp(value, -1)

    return get


def store_getter(store: str) -> ValueGetter:
    return ValueGetter((store,), lambda ctx: _timed_store_get(ctx, store))


def no_getter(reason: str) -> ValueGetter:
    """A table that cannot be read by key (``reason`` says what to do instead)."""

    def make(ctx: ProcessorContext) -> TimedGet:
        raise ValueError(reason)

    return ValueGetter((), make)


@dataclass(frozen=True, slots=True)
class StreamNode:
    """A stream: the node emitting it and its serdes. ``key_changed``: the key may no longer
    match the partitioning, so a join or grouping repartitions first."""

    topology: Topology
    name: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    key_changed: bool = False

    def then(
        self,
        name: str,
        supplier: Callable[[], Processor],
        *,
        key_changed: bool | None = None,
        key_serde: Serde[Any] | None = None,
        value_serde: Serde[Any] | None = None,
        stores: tuple[str, ...] = (),
    ) -> StreamNode:
        """A processor ``name`` after this node; serdes and ``key_changed`` default to ours."""
        node = self.topology.add_processor(name, supplier, self.name, stores=stores)
        return StreamNode(
            self.topology,
            node,
            key_serde or self.key_serde,
            value_serde or self.value_serde,
            self.key_changed if key_changed is None else key_changed,
        )

    def with_serdes(
        self, key_serde: Serde[Any] | None, value_serde: Serde[Any] | None
    ) -> StreamNode:
        """The same stream read with other serdes (None keeps ours)."""
        return replace(
            self, key_serde=key_serde or self.key_serde, value_serde=value_serde or self.value_serde
        )

    def repartition(
        self,
        name: str | None,
        *,
        partitions: int | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> StreamNode:
        """Through ``<application.id>-<name>-repartition`` (written, then read back), so the
        tasks downstream follow the current key (or ``partitioner``'s choice)."""
        topology = self.topology
        base = (name or topology.new_name("KSTREAM-AGGREGATE-STATE-STORE")) + REPARTITION_SUFFIX
        # as Kafka's repartition: a record with a null key cannot be partitioned by it, dropped
        keyed = topology.add_processor(f"{base}-filter", NullKeyFilter, self.name)
        topology.add_sink(
            f"{base}-sink",
            base,
            self.key_serde,
            self.value_serde,
            keyed,
            internal=True,
            partitioner=partitioner,
        )
        source = topology.add_source(
            f"{base}-source",
            base,
            self.key_serde,
            self.value_serde,
            internal=True,
            partitions=partitions,
        )
        return StreamNode(topology, source, self.key_serde, self.value_serde)

    def repartitioned_if_needed(self, name: str | None) -> StreamNode:
        """Repartitioned when the key changed (joins, ``group_by_key``), else this stream."""
        return self.repartition(name) if self.key_changed else self


@dataclass(frozen=True, slots=True)
class TableNode:
    """A table: the node emitting its updates, its store (None: read through ``getter`` from
    its parent's store) and, for windowed tables, how long after a window's end it closes."""

    topology: Topology
    name: str
    store: str | None
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    getter: ValueGetter
    window_close_delay_ms: int | None = None

    @classmethod
    def stored(
        cls,
        topology: Topology,
        name: str,
        store: str,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
        *,
        window_close_delay_ms: int | None = None,
    ) -> TableNode:
        """A table read from its own store ``store``."""
        getter = store_getter(store)
        return cls(topology, name, store, key_serde, value_serde, getter, window_close_delay_ms)
