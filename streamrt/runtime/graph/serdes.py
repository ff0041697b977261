"""The serde of the graph's own record format for table Changes on repartition topics
(windowed keys: :mod:`.windowed_serdes`)."""

from __future__ import annotations

import struct
from typing import Any

from streamrt.runtime.processor import Change
from streamrt.serde import Serde

__all__ = ("ChangeSerde",)

_LEN = struct.Struct(">i")


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
