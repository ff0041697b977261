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
    "Closers",
    "NullKeyFilter",
    "Reader",
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
#: what a reader opened and closes with its processor (``ValueGetter.build``)
Closers = list[Callable[[], None]]


@dataclass(frozen=True, slots=True)
class ValueGetter:
    """How a processor reads a table by key: the stores it needs in its task, and
    ``build(ctx, closers)``, which makes ``get(key) -> ValueAndTimestamp | None`` for the
    processor's context (Kafka's ``KTableValueGetter``: table joins need the other row's
    timestamp) and appends to ``closers`` what it opened (a ``transform_values`` getter's
    transformer), since the reading processor must close it with the task, as Kafka's
    ``KTableValueGetter.close``. Processors call :meth:`open`, never ``build``."""

    stores: tuple[str, ...]
    build: Callable[[ProcessorContext, Closers], TimedGet]

    def open(self, ctx: ProcessorContext) -> Reader:
        """The processor's reader; its ``close()`` belongs in the processor's ``close()``."""
        closers: Closers = []
        return Reader(self.build(ctx, closers), closers)


class Reader:
    """One processor's read access to a table: ``timed(key)`` (value and timestamp),
    ``value(key)``, and ``close()`` of what the getter chain opened."""

    __slots__ = ("_closers", "timed")

    def __init__(self, timed: TimedGet, closers: Closers) -> None:
        self.timed = timed
        self._closers = closers

    def value(self, key: Any) -> Any:
        found = self.timed(key)
        return None if found is None else found.value

    def close(self) -> None:
        """Close each once (a second call closes nothing); every one is closed even if one
        raises, and the first error is raised after."""
        closers, self._closers = self._closers, []
        error: Exception | None = None
        for close in closers:
            try:
                close()
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error


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
    return ValueGetter((store,), lambda ctx, _closers: _timed_store_get(ctx, store))


def no_getter(reason: str) -> ValueGetter:
    """A table that cannot be read by key (``reason`` says what to do instead)."""

    def make(ctx: ProcessorContext, closers: Closers) -> TimedGet:
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
