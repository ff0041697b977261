"""The processor API under the DSL: a processor gets each record and a context.

The context gives the processor its state stores, ``forward`` to its children, the record's
timestamp and headers, and ``schedule`` for punctuation (stream-time or wall-clock callbacks),
as Kafka Streams' ``ProcessorContext``. Table nodes forward :class:`Change` values (new and
old); a child that does not ask for changes receives the new value only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

__all__ = (
    "Cancellable",
    "Change",
    "Headers",
    "KeyValueStore",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Punctuator",
    "TupleForwarder",
    "ValueAndTimestamp",
    "Windowed",
)

Punctuator = Callable[[int], None]
Headers = tuple[tuple[str, bytes], ...]  # Kafka record headers, in order (keys may repeat)


class PunctuationType(Enum):
    """What time a punctuator follows: record time (advances only with data) or wall clock."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


class Cancellable(Protocol):
    """Returned by ``schedule``: ``cancel()`` stops future runs (allowed inside the callback)."""

    def cancel(self) -> None: ...


@dataclass(frozen=True, slots=True, init=False)
class Change:
    """A table update: the new value and the one it replaces (``None``: absent/deleted), as
    Kafka Streams' ``Change<V>``. Aggregations with a subtractor and table joins need ``old``."""

    new: Any
    old: Any = None
    is_latest: bool = True  # False: an out-of-order version of a versioned table (KIP-914)

    def __init__(self, new: Any, old: Any = None, is_latest: bool = True) -> None:
        # Through the slots' own setters: a frozen dataclass's generated __init__ calls
        # object.__setattr__ per field, 2-3x the cost, once or twice per table update.
        _CHANGE_SLOTS[0](self, new)
        _CHANGE_SLOTS[1](self, old)
        _CHANGE_SLOTS[2](self, is_latest)


@dataclass(frozen=True, slots=True, init=False)
class ValueAndTimestamp:
    """A stored row and its timestamp, as Kafka Streams' ``ValueAndTimestamp`` (the timestamp
    is -1 in a store that keeps none: only tables' and aggregates' stores keep it)."""

    value: Any
    timestamp: int

    def __init__(self, value: Any, timestamp: int) -> None:
        _ROW_SLOTS[0](self, value)  # as Change's: one per store read
        _ROW_SLOTS[1](self, timestamp)


def _slot_setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The slots' descriptors' setters, which a frozen class's ``__setattr__`` does not guard."""
    return tuple(cls.__dict__[name].__set__ for name in names)


_CHANGE_SLOTS = _slot_setters(Change, "new", "old", "is_latest")
_ROW_SLOTS = _slot_setters(ValueAndTimestamp, "value", "timestamp")


@dataclass(frozen=True, slots=True)
class Windowed:
    """The key of a windowed aggregate: the record key and its window ``[start, end)`` in ms."""

    key: Any
    start: int
    end: int


class KeyValueStore(Protocol):
    """A typed view of one task's state store; writes are also sent to its changelog."""

    name: str

    def get(self, key: Any) -> Any: ...

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp | None:
        """The row and its timestamp (Kafka's ``TimestampedKeyValueStore``)."""
        ...

    def put(self, key: Any, value: Any, timestamp: int | None = None) -> None:
        """Store the row with ``timestamp`` (default: the current record's)."""
        ...

    def delete(self, key: Any) -> Any:
        """Delete ``key``; returns the value it had (None: absent)."""
        ...

    def put_if_absent(self, key: Any, value: Any, timestamp: int | None = None) -> Any:
        """Put only if ``key`` has no value; returns the value it had."""
        ...

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None: ...

    def approximate_num_entries(self) -> int: ...

    def items(self) -> Iterator[tuple[Any, Any]]: ...

    def range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """Entries with ``start <= key <= end`` (both inclusive, as Kafka's ``range``) in
        serialized-key order; a ``None`` bound is open; nothing when ``start`` > ``end``."""
        ...

    def reverse_range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """``range`` in descending serialized-key order."""
        ...

    def all(self) -> Iterator[tuple[Any, Any]]: ...

    def reverse_all(self) -> Iterator[tuple[Any, Any]]: ...

    def prefix_scan(self, prefix: Any, prefix_serde: Any = None) -> Iterator[tuple[Any, Any]]:
        """Entries whose serialized key starts with the serialized ``prefix``."""
        ...

    def half_open_range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """``start <= key < end`` (not Kafka's): scans of byte layouts (joins, buffers)."""
        ...


class ProcessorContext(Protocol):
    """What a processor sees of its task while it processes a record."""

    @property
    def task_id(self) -> str: ...

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def headers(self) -> Headers:
        """The current record's headers (empty in a punctuation)."""
        ...

    @property
    def stream_time(self) -> int:
        """The task's stream time: the largest record timestamp processed (-1: none yet)."""
        ...

    @property
    def takes_changes(self) -> bool:
        """Whether a child takes table :class:`Change` values (the others get new values)."""
        ...

    def forward(
        self,
        key: Any,
        value: Any,
        to: str | None = None,
        *,
        timestamp: int | None = None,
        headers: Headers | None = None,
    ) -> None:
        """Send to the children (or the child ``to``); ``timestamp``/``headers`` override the
        current record's for this forward only."""
        ...

    def get_store(self, name: str) -> KeyValueStore: ...

    def schedule(
        self,
        interval_ms: int,
        kind: PunctuationType | Punctuator,
        punctuator: Punctuator | None = None,
    ) -> Cancellable:
        """``schedule(ms, PunctuationType.STREAM_TIME, fn)``; ``schedule(ms, fn)`` means
        wall-clock time. ``fn`` gets the current stream or wall-clock time."""
        ...


class Processor:
    """Base class of every processor; override :meth:`process` (and ``init``/``close``)."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, key: Any, value: Any) -> None:
        self.context.forward(key, value)

    def close(self) -> None:
        """Called when the task closes (revocation or shutdown)."""


class TupleForwarder:
    """Forwards a processor's store updates downstream, as Kafka Streams' TupleForwarder.

    Updates go downstream as ``Change(new, old)`` (table children need the old value; other
    children get ``new``). Over a cached store the cache's flush forwards each key's last
    update, with the value the store held before the flush as ``old`` (once per key per flush),
    and :meth:`maybe_forward` does nothing; over an uncached store every update is forwarded
    at once.
    """

    def __init__(self, context: ProcessorContext, store_name: str) -> None:
        self.context = context
        store = context.get_store(store_name)
        listen = getattr(store, "set_flush_listener", None)
        self.cached = bool(listen is not None and listen(self._forward))
        # no child takes a Change (e.g. to_stream, a sink): forward the new value without one
        self.changes = context.takes_changes

    def _forward(self, key: Any, new: Any, old: Any) -> None:
        self.context.forward(key, Change(new, old) if self.changes else new)

    def maybe_forward(
        self, key: Any, new: Any, old: Any, timestamp: int | None = None, is_latest: bool = True
    ) -> None:
        """Forward at once unless cached; ``timestamp`` (default: the record's) is the
        result's, which the cache keeps with the row for its flush."""
        if not self.cached:
            if timestamp is not None and timestamp == self.context.timestamp:
                timestamp = None  # the record's own (as usual): no context to swap and restore
            value = Change(new, old, is_latest) if self.changes else new
            self.context.forward(key, value, timestamp=timestamp)
