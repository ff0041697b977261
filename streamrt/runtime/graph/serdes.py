"""The serdes of the graph's own record formats: windowed keys and table Changes."""

from __future__ import annotations

import struct
from typing import Any

from streamrt.runtime.processor import Change, Windowed
from streamrt.serde import Serde

__all__ = ("ChangeSerde", "WindowedSerde")

_WINDOW = struct.Struct(">qq")
_LEN = struct.Struct(">i")


class WindowedSerde:
    """Windowed keys: the inner key's bytes, then window start and end (8 bytes each)."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner

    def serialize(self, value: Windowed | None) -> bytes | None:
        if value is None:
            return None
        inner = self.inner.serialize(value.key) or b""
        return inner + _WINDOW.pack(value.start, value.end)

    def deserialize(self, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        start, end = _WINDOW.unpack(data[-16:])
        return Windowed(self.inner.deserialize(data[:-16]), start, end)


class ChangeSerde:
    """A Change on a repartition topic: a flag (1 new, 2 old, 3 both), then the values."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner

    def serialize(self, value: Change | None) -> bytes | None:
        if value is None:
            return None
        new = None if value.new is None else self.inner.serialize(value.new)
        old = None if value.old is None else self.inner.serialize(value.old)
        flag = (1 if new is not None else 0) | (2 if old is not None else 0)
        out = bytes([flag])
        if new is not None:
            out += _LEN.pack(len(new)) + new
        if old is not None:
            out += old
        return out

    def deserialize(self, data: bytes | None) -> Change | None:
        if data is None:
            return None
        flag, pos = data[0], 1
        new = old = None
        if flag & 1:
            (n,) = _LEN.unpack_from(data, pos)
            new = self.inner.deserialize(data[pos + 4 : pos + 4 + n])
            pos += 4 + n
        if flag & 2:
            old = self.inner.deserialize(data[pos:])
        return Change(new, old)
