"""InMemoryStore: the store contract on a dict, for tests and for state small enough to
rebuild from its changelog at every start (Kafka Streams' ``in_memory`` DSL store)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ("InMemoryStore",)

_DELETED = object()


class InMemoryStore:
    """Nothing survives :meth:`close`: reopened, it reports no offset and is restored fully."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._data: dict[bytes, bytes] | None = None
        self._pending: dict[bytes, bytes | object] = {}
        self._offset: int | None = None

    @property
    def persistent(self) -> bool:
        return False

    @property
    def is_open(self) -> bool:
        return self._data is not None

    def open(self) -> None:
        if self._data is None:
            self._data, self._offset = {}, None

    def close(self) -> None:
        self._data, self._offset = None, None
        self._pending.clear()

    def get(self, key: bytes) -> bytes | None:
        staged = self._pending.get(key)
        if staged is _DELETED:
            return None
        if isinstance(staged, bytes):
            return staged
        return self._require().get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._require()
        self._pending[key] = value

    def delete(self, key: bytes) -> None:
        self._require()
        self._pending[key] = _DELETED

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        return self.range(None, None)

    def range(self, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        merged: dict[bytes, bytes | object] = dict(self._require())
        merged.update(self._pending)
        for key in sorted(merged):
            if (start is not None and key < start) or (end is not None and key >= end):
                continue
            value = merged[key]
            if isinstance(value, bytes):
                yield key, value

    def persist(self) -> None:
        """Nothing on disk to prepare."""

    def flush(self, changelog_offset: int | None) -> None:
        data = self._require()
        for key, value in self._pending.items():
            if isinstance(value, bytes):
                data[key] = value
            else:
                data.pop(key, None)
        self._pending.clear()
        if changelog_offset is not None:
            self._offset = changelog_offset

    def discard(self) -> None:
        """Drop staged writes: reads see the last flushed state again."""
        self._pending.clear()

    def write_batch(self, records: Iterable[tuple[bytes, bytes | None]], next_offset: int) -> None:
        if self._pending:
            raise RuntimeError(f"state store {self.name}: restore interleaved with processing")
        data = self._require()
        for key, value in records:
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        self._offset = next_offset

    def changelog_offset(self) -> int | None:
        self._require()
        return self._offset

    def _require(self) -> dict[bytes, bytes]:
        if self._data is None:
            raise RuntimeError(f"state store {self.name} is not open")
        return self._data
