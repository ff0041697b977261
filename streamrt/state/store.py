"""The bytes-level store contract every state store implements (RocksDB, in-memory).

A store stages writes (read-your-writes) and makes them durable only in :meth:`flush`,
together with the changelog offset they correspond to, so a store never claims data it does
not hold. That staging is the seam for a record cache in front (issue 12) and for a
transaction buffer applied only after a Kafka transaction commits (issue 15).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal, Protocol, runtime_checkable

__all__ = ("IN_MEMORY", "ROCKS_DB", "KeyValueStore", "StoreKind")

StoreKind = Literal["rocksDB", "in_memory"]
ROCKS_DB: StoreKind = "rocksDB"  # Kafka Streams' ``default.dsl.store`` values
IN_MEMORY: StoreKind = "in_memory"


@runtime_checkable
class KeyValueStore(Protocol):
    """One state store of one task, keyed and valued by bytes."""

    name: str

    @property
    def persistent(self) -> bool:
        """True if data and offset survive a close (then the checkpoint hint may name it)."""
        ...

    @property
    def is_open(self) -> bool: ...

    def open(self) -> None: ...

    def close(self) -> None:
        """Close without flushing: unflushed writes are covered by the changelog."""
        ...

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every key/value, staged writes included, in ascending key order."""
        ...

    def range(self, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Keys in ``[start, end)`` (``None``: unbounded), staged writes included, ascending."""
        ...

    def flush(self, changelog_offset: int | None) -> None:
        """Make staged writes durable with ``changelog_offset`` (if given), atomically."""
        ...

    def persist(self) -> None:
        """Start writing what the store holds in memory to its files, in the background (RocksDB:
        a memtable flush), so that a close soon after is quick. Durability is unchanged: what
        :meth:`flush` wrote is durable already. A hand-off asks it ahead of the stop."""
        ...

    def discard(self) -> None:
        """Drop every staged write (an aborted transaction); durable data is untouched."""
        ...

    def write_batch(self, records: Iterable[tuple[bytes, bytes | None]], next_offset: int) -> None:
        """Apply changelog records (``None`` deletes) and advance the offset, atomically.

        Used by restoration; must not interleave with staged writes from processing.
        """
        ...

    def changelog_offset(self) -> int | None:
        """The next changelog offset to restore from; ``None`` if never checkpointed."""
        ...
