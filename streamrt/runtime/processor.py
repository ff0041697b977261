"""The processor API under the DSL: a processor gets each record and a context.

The context gives the processor its state stores, ``forward`` to its children, and
``schedule`` for punctuation (wall-clock callbacks), as Kafka Streams' ``ProcessorContext``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = (
    "KeyValueStore",
    "Processor",
    "ProcessorContext",
    "Punctuator",
    "TupleForwarder",
    "Windowed",
)

Punctuator = Callable[[int], None]


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

    def put(self, key: Any, value: Any) -> None: ...

    def delete(self, key: Any) -> None: ...

    def items(self) -> Iterator[tuple[Any, Any]]: ...


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

    def forward(self, key: Any, value: Any, to: str | None = None) -> None: ...

    def get_store(self, name: str) -> KeyValueStore: ...

    def schedule(self, interval_ms: int, punctuator: Punctuator) -> None: ...


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

    Over a cached store the cache's flush forwards each key's last update (once per key per
    flush) and :meth:`maybe_forward` does nothing; over an uncached store every update is
    forwarded at once.
    """

    def __init__(self, context: ProcessorContext, store_name: str) -> None:
        self.context = context
        store = context.get_store(store_name)
        listen = getattr(store, "set_flush_listener", None)
        self.cached = bool(listen is not None and listen(context.forward))

    def maybe_forward(self, key: Any, value: Any) -> None:
        if not self.cached:
            self.context.forward(key, value)
