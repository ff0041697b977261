"""ChangeLoggingStore: the typed store a processor sees; every write also goes to the store's
changelog partition through the task's record collector.

It knows its bytes store, serdes, changelog partition, the collector and the task's current
record context (for the changelog record's timestamp) — not the task. A record cache (issue 12)
would sit between this view and the bytes store.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from streamrt.runtime.topology import StoreSpec
from streamrt.state import KeyValueStore, TopicPartition

__all__ = ("ChangeLoggingStore", "RecordCollector", "RecordContext")


class RecordCollector(Protocol):
    """Where a task's output goes; the thread's producer drains it in order."""

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None: ...


@dataclass(slots=True)
class RecordContext:
    """The record being processed (or the punctuation time), shared by a task's processors
    and store views, as Kafka Streams' ProcessorRecordContext."""

    topic: str = ""
    partition: int = -1
    offset: int = -1
    timestamp: int = 0
    headers: tuple[tuple[str, bytes], ...] = ()


class ChangeLoggingStore:
    """A typed view over one bytes store; writes are logged to ``changelog``."""

    def __init__(
        self,
        spec: StoreSpec,
        store: KeyValueStore,
        changelog: TopicPartition,
        collector: RecordCollector,
        context: RecordContext,
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.changelog = changelog
        self._store = store
        self._collector = collector
        self._context = context

    def get(self, key: Any) -> Any:
        raw = self._store.get(self._key(key))
        return None if raw is None else self.spec.value_serde.deserialize(raw)

    def put(self, key: Any, value: Any) -> None:
        kb = self._key(key)
        vb = self.spec.value_serde.serialize(value)
        if vb is None:
            self.delete(key)
            return
        self._store.put(kb, vb)
        self._log(kb, vb)

    def delete(self, key: Any) -> None:
        kb = self._key(key)
        self._store.delete(kb)
        self._log(kb, None)

    def items(self) -> Iterator[tuple[Any, Any]]:
        for kb, vb in self._store.items():
            yield self.spec.key_serde.deserialize(kb), self.spec.value_serde.deserialize(vb)

    def range(self, start: Any, end: Any) -> Iterator[tuple[Any, Any]]:
        """Entries with ``start <= key < end`` in serialized-key order (``None``: unbounded);
        joins use it with bytes keys they lay out for prefix and time-range scans."""
        lo = None if start is None else self._key(start)
        hi = None if end is None else self._key(end)
        for kb, vb in self._store.range(lo, hi):
            yield self.spec.key_serde.deserialize(kb), self.spec.value_serde.deserialize(vb)

    def _key(self, key: Any) -> bytes:
        kb = self.spec.key_serde.serialize(key)
        if kb is None:
            raise ValueError(f"store {self.name}: keys must not be None")
        return bytes(kb)

    def _log(self, key: bytes, value: bytes | None) -> None:
        self._collector.send(
            self.changelog.topic, key, value, self.changelog.partition, self._context.timestamp
        )
