"""The typed view of a versioned key-value store (Kafka's KIP-914 ``VersionedKeyValueStore``).

The versions live on the task's bytes store in :mod:`streamrt.state.versioned`'s layout; every
row written is also sent to the store's changelog (row key and row bytes, with the version's
timestamp), so restoration, which writes changelog records back as they are, rebuilds the same
rows. The view also answers the plain key-value reads a table's processors and value getters
make (``get``/``get_with_timestamp``: the latest version), so a versioned table is read like
any other, and ``get_as_of`` serves the stream-table join (KIP-960).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from streamrt.runtime.processor import ValueAndTimestamp
from streamrt.runtime.stores import RecordCollector, RecordContext, StoreSpec
from streamrt.state import KeyValueStore
from streamrt.state.versioned import LATEST, NOT_PUT, Version, VersionedStore
from streamrt.topic_partition import TopicPartition

__all__ = ("LATEST", "NOT_PUT", "VersionedStoreView")


class _LoggedRows:
    """The bytes store with each write also sent to the changelog."""

    def __init__(
        self,
        store: KeyValueStore,
        changelog: TopicPartition,
        collector: RecordCollector,
        context: RecordContext,
    ) -> None:
        self.store = store
        self.changelog = changelog
        self.collector = collector
        self.context = context

    def get(self, key: bytes) -> bytes | None:
        return self.store.get(key)

    def range(self, start: bytes | None, end: bytes | None) -> Iterable[tuple[bytes, bytes]]:
        return self.store.range(start, end)

    def put(self, key: bytes, value: bytes) -> None:
        self.store.put(key, value)
        self._log(key, value)

    def delete(self, key: bytes) -> None:
        self.store.delete(key)
        self._log(key, None)

    def _log(self, key: bytes, value: bytes | None) -> None:
        tp = self.changelog
        self.collector.send(tp.topic, key, value, tp.partition, self.context.timestamp)


class VersionedStoreView:
    """Typed versions of one store; timestamps default to the current record's."""

    def __init__(
        self,
        spec: StoreSpec,
        store: KeyValueStore,
        changelog: TopicPartition,
        collector: RecordCollector,
        context: RecordContext,
    ) -> None:
        if spec.versioned_history_ms is None:
            raise ValueError(f"store {spec.name} is not versioned")
        self.name = spec.name
        self.spec = spec
        self.changelog = changelog
        self._context = context
        rows = _LoggedRows(store, changelog, collector, context)
        self.versions = VersionedStore(rows, spec.versioned_history_ms)

    def put(self, key: Any, value: Any, timestamp: int | None = None) -> int:
        """Add a version (``value`` None: a tombstone); :data:`NOT_PUT` if older than the
        history retention, :data:`LATEST` if the latest, else when it stops being valid."""
        vb = None if value is None else self.spec.value_serde.serialize(value)
        ts = self._context.timestamp if timestamp is None else timestamp
        return self.versions.put(self._key(key), None if vb is None else bytes(vb), ts)

    def delete(self, key: Any, timestamp: int | None = None) -> int:
        """A tombstone version at ``timestamp`` (default: the current record's)."""
        return self.put(key, None, timestamp)

    def get(self, key: Any) -> Any:
        found = self.get_with_timestamp(key)
        return None if found is None else found.value

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp | None:
        """The latest version (None if absent or a tombstone)."""
        return self._typed(self.versions.get(self._key(key)))

    def get_as_of(self, key: Any, as_of: int) -> ValueAndTimestamp | None:
        """The version valid at ``as_of``; None beyond the history retention."""
        return self._typed(self.versions.get_as_of(self._key(key), as_of))

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Not offered: Kafka's versioned stores have no range queries either."""
        raise NotImplementedError(f"versioned store {self.name}: no range reads")

    def set_flush_listener(self, listener: object) -> bool:
        """Never cached (Kafka's versioned stores have no cache): returns False."""
        return False

    def flush_cache(self) -> None:
        """Nothing cached."""

    def _key(self, key: Any) -> bytes:
        kb = self.spec.key_serde.serialize(key)
        if kb is None:
            raise ValueError(f"store {self.name}: keys must not be None")
        return bytes(kb)

    def _typed(self, version: Version | None) -> ValueAndTimestamp | None:
        if version is None or version.value is None:
            return None
        return ValueAndTimestamp(
            self.spec.value_serde.deserialize(version.value), version.timestamp
        )
