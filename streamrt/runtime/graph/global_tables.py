"""Global tables in the graph: the spec a topology holds and the store it binds when run.

A global table is in no task: every instance reads *all* partitions of its topic into one
:class:`GlobalStore` (see :mod:`streamrt.runtime.processors.global_thread`), and joins look keys
up in it. The spec lives in the graph so the topology, the join processor and the test driver
share it without knowing the DSL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamrt.errors import StreamrtError
from streamrt.serde import Serde

__all__ = ("GlobalStore", "GlobalTableSpec")


class GlobalStore:
    """The typed, read-only view stream tasks and queries see; written by the global thread.

    Single writer (the global thread or the test driver); readers on other threads see whole
    values, as dict operations are atomic.
    """

    def __init__(self, name: str, key_serde: Serde[Any], value_serde: Serde[Any]) -> None:
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._data: dict[bytes, bytes] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """One record of the topic: a value upserts, a tombstone deletes, a null key is skipped."""
        if key is None:
            return
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = value

    def get(self, key: Any) -> Any:
        kb = self.key_serde.serialize(key)
        raw = None if kb is None else self._data.get(bytes(kb))
        return None if raw is None else self.value_serde.deserialize(raw)

    def items(self) -> list[tuple[Any, Any]]:
        return [
            (self.key_serde.deserialize(k), self.value_serde.deserialize(v))
            for k, v in sorted(self._data.items())
        ]

    def __len__(self) -> int:
        return len(self._data)


@dataclass(slots=True)
class GlobalTableSpec:
    """A global table of the topology; ``store`` is set when an app or test driver runs it."""

    name: str
    topic: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    store: GlobalStore | None = field(default=None)

    def bind(self) -> GlobalStore:
        self.store = GlobalStore(self.name, self.key_serde, self.value_serde)
        return self.store

    def require(self) -> GlobalStore:
        if self.store is None:
            raise StreamrtError(f"global table {self.name} is not running (app not started)")
        return self.store
