"""``KTable.transform_values``: Kafka's ``KTableTransformValues`` (still in Kafka Streams 4.3.1,
where ``KStream.transformValues`` went with KIP-820).

A :class:`ValueTransformerWithKey` (a fresh one per task from the supplier) is given a context
that cannot forward (Kafka's ``ForwardingDisabledProcessorContext``) and is asked for each
update's new value, null (a delete) included. Unmaterialized, it is asked for the old value
too when a downstream operator needs old values, and a read of the table by key (a join's
value getter) asks another instance of it about the parent's current value; materialized,
the result goes to the table's store and old values come from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from streamrt.errors import StreamrtError
from streamrt.runtime.graph.nodes import Closers, TimedGet, ValueGetter
from streamrt.runtime.processor import Change, Processor, ProcessorContext, ValueAndTimestamp

__all__ = (
    "TableTransformValuesProcessor",
    "ValueTransformerWithKey",
    "transform_values_getter",
)

#: Kafka's ``RecordQueue.UNKNOWN``: the timestamp of a read that found no parent row
UNKNOWN = -1


class ValueTransformerWithKey:
    """Kafka's ``ValueTransformerWithKey``: ``init(context)`` once per task (the context can
    read stores and schedule, not forward), ``transform(key, value)`` per value (``value`` is
    None for a delete; return the new value), ``close()`` when the task closes."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def transform(self, key: Any, value: Any) -> Any:
        raise NotImplementedError("a ValueTransformerWithKey implements transform(key, value)")

    def close(self) -> None:
        """Called when the task closes."""


TransformerSupplier = Callable[[], ValueTransformerWithKey]


class _ForwardingDisabled:
    """The processor's context without ``forward``: a transformer returns its value."""

    def __init__(self, context: ProcessorContext) -> None:
        self._context = context

    def forward(self, *args: Any, **kwargs: Any) -> None:
        raise StreamrtError(
            "a ValueTransformerWithKey cannot forward: return the new value from transform()"
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def _started(supplier: TransformerSupplier, context: ProcessorContext) -> ValueTransformerWithKey:
    transformer = supplier()
    transformer.init(cast(ProcessorContext, _ForwardingDisabled(context)))
    return transformer


class TableTransformValuesProcessor(Processor):
    """Each update's new value (and old, as above) through the task's transformer."""

    def __init__(
        self, supplier: TransformerSupplier, store: str | None, send_old_values: bool
    ) -> None:
        self.supplier = supplier
        self.store_name = store
        self.send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.transformer = _started(self.supplier, context)

    def process(self, key: Any, value: Any) -> None:
        change = value if isinstance(value, Change) else Change(value, None)
        new = self.transformer.transform(key, change.new)
        if self.store_name is None:
            old = self.transformer.transform(key, change.old) if self.send_old_values else None
        else:
            store = self.context.get_store(self.store_name)
            old = store.get(key) if self.send_old_values else None
            if new is None:
                store.delete(key)
            else:
                store.put(key, new)
        self.context.forward(key, Change(new, old))

    def close(self) -> None:
        self.transformer.close()


def transform_values_getter(parent: ValueGetter, supplier: TransformerSupplier) -> ValueGetter:
    """Reads of an unmaterialized transformed table: the parent's value (None if absent)
    through the reader's own transformer, with the parent row's timestamp. The transformer
    is closed with the reading processor (Kafka's ``KTableTransformValuesGetter.close``)."""

    def make(ctx: ProcessorContext, closers: Closers) -> TimedGet:
        get = parent.build(ctx, closers)
        transformer = _started(supplier, ctx)
        closers.append(transformer.close)

        def transformed(key: Any) -> ValueAndTimestamp | None:
            found = get(key)
            value = transformer.transform(key, None if found is None else found.value)
            if value is None:
                return None
            return ValueAndTimestamp(value, UNKNOWN if found is None else found.timestamp)

        return transformed

    return ValueGetter(parent.stores, make)
