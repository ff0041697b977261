"""Lookup joins of a stream: with a KTable (co-partitioned, so the table's store is in the same
task) and with a GlobalKTable (any key: every instance holds the whole table, so no
co-partitioning and no repartition)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamrt.runtime.graph.global_tables import GlobalTableSpec
from streamrt.runtime.graph.nodes import ValueGetter
from streamrt.runtime.processor import Processor, ProcessorContext
from streamrt.runtime.processors.join_windows import KeyJoiner

__all__ = ("StreamGlobalJoinProcessor", "StreamTableJoinProcessor")


class StreamTableJoinProcessor(Processor):
    """Only stream records produce output; the result keeps the stream record's ts/headers."""

    def __init__(self, getter: ValueGetter, joiner: KeyJoiner, left: bool) -> None:
        self.getter = getter
        self.joiner = joiner
        self.left = left

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.get = self.getter.make(context)

    def process(self, key: Any, value: Any) -> None:
        if value is None:
            return
        if key is None:
            if self.left:
                self.context.forward(key, self.joiner(key, value, None))
            return
        other = self.get(key)
        if other is None and not self.left:
            return
        self.context.forward(key, self.joiner(key, value, other))


class StreamGlobalJoinProcessor(Processor):
    """``key_mapper(key, value)`` picks the table key; the result keeps the stream's key/ts."""

    def __init__(
        self,
        spec: GlobalTableSpec,
        key_mapper: Callable[[Any, Any], Any],
        joiner: KeyJoiner,
        left: bool,
    ) -> None:
        self.spec = spec
        self.key_mapper = key_mapper
        self.joiner = joiner
        self.left = left

    def process(self, key: Any, value: Any) -> None:
        if value is None:
            return
        table_key = self.key_mapper(key, value)
        other = None if table_key is None else self.spec.require().get(table_key)
        if other is None and not self.left:
            return
        self.context.forward(key, self.joiner(key, value, other))
