"""Lookup joins of a stream: with a KTable (co-partitioned, so the table's store is in the same
task) and with a GlobalKTable (any key: every instance holds the whole table, so no
co-partitioning and no repartition)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamrt.runtime.graph.global_tables import GlobalTableSpec
from streamrt.runtime.graph.nodes import ValueGetter
from streamrt.runtime.processor import Headers, Processor, ProcessorContext
from streamrt.runtime.processors.grace_buffer import BufferedRecord, GraceBuffer
from streamrt.runtime.processors.join_windows import KeyJoiner
from streamrt.serde import Serde

__all__ = ("GraceSpec", "StreamGlobalJoinProcessor", "StreamTableJoinProcessor")

_NO_TIME = -(1 << 63)


@dataclass(frozen=True, slots=True)
class GraceSpec:
    """A join with a versioned table: its store (read as of the stream record's time) and,
    for a grace period > 0, the buffer store and the stream's serdes."""

    table_store: str
    grace_ms: int
    buffer_store: str | None
    serdes: tuple[Serde[Any], Serde[Any]]


class StreamTableJoinProcessor(Processor):
    """Only stream records produce output; the result keeps the stream record's ts/headers.

    On a versioned table (``as_of_store``) the stream record meets the table row valid at its
    own timestamp (KIP-914); with a ``grace`` buffer it first waits until the stream time has
    passed it by the grace period (KIP-923's ``Joined.withGracePeriod``), so table updates
    arriving out of order within the grace are seen."""

    def __init__(
        self,
        getter: ValueGetter,
        joiner: KeyJoiner,
        left: bool,
        grace: GraceSpec | None = None,
    ) -> None:
        self.getter = getter
        self.joiner = joiner
        self.left = left
        self.grace = grace
        self.observed_time = _NO_TIME

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.reader = self.getter.open(context)
        self.get = self.reader.value
        self.observed_time = _NO_TIME  # read from the grace buffer's store at the first record
        self.as_of: Callable[[Any, int], Any] | None = None
        self.buffer: GraceBuffer | None = None
        if self.grace is not None:
            versioned = context.get_store(self.grace.table_store)
            self.as_of = versioned.get_as_of  # type: ignore[attr-defined]
            if self.grace.buffer_store is not None:
                store = context.get_store(self.grace.buffer_store)
                self.buffer = GraceBuffer(store, *self.grace.serdes)

    def close(self) -> None:
        self.reader.close()

    def process(self, key: Any, value: Any) -> None:
        if value is None:
            return
        if key is None:
            if self.left:
                self.context.forward(key, self.joiner(key, value, None))
            return
        ts = self.context.timestamp
        if self.buffer is None or self.grace is None:
            self._join(key, value, ts)
            return
        self._advance(self.buffer, ts)
        deadline = self.observed_time - self.grace.grace_ms
        if ts < deadline:  # too late to wait: joined at once, as Kafka's buffer refuses it
            self._join(key, value, ts)
        else:
            self.buffer.put(key, value, ts, self.context.headers)
        self.buffer.evict_until(deadline, self._emit)

    def _advance(self, buffer: GraceBuffer, ts: int) -> None:
        """Stream time, kept in the buffer's store (read at the first record: the store is
        restored by then) so a reopened or restored task goes on from it."""
        if self.observed_time == _NO_TIME:
            kept = buffer.stream_time()
            self.observed_time = _NO_TIME if kept is None else kept
        if ts > self.observed_time:
            self.observed_time = ts
            buffer.keep_stream_time(ts)

    def _emit(self, record: BufferedRecord) -> None:
        self._join(record.key, record.value, record.timestamp, record.headers)

    def _join(self, key: Any, value: Any, ts: int, headers: Headers | None = None) -> None:
        if self.as_of is None:
            other = self.get(key)
        else:
            found = self.as_of(key, ts)
            other = None if found is None else found.value
        if other is None and not self.left:
            return
        if headers is None:
            self.context.forward(key, self.joiner(key, value, other))
        else:
            self.context.forward(key, self.joiner(key, value, other), timestamp=ts, headers=headers)


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
