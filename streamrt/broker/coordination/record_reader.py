"""Reading Kafka's coordinator record schemas (``__consumer_offsets``, ``__transaction_state``).

Both coordinators' keys and values start with an int16 version followed by Kafka primitives,
non-flexible or (newer versions) flexible: compact strings and arrays, tagged fields. One reader
serves both record serdes.
"""

from __future__ import annotations

import struct
import uuid

__all__ = ("RecordReader",)


class RecordReader:
    """Kafka primitives after the int16 version; ``flexible`` reads the compact forms and
    tagged fields (the caller sets it from the version it found)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 2
        self.version: int = struct.unpack_from(">h", buf, 0)[0]
        self.flexible = False

    def _unpack(self, fmt: str, size: int) -> int:
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return int(v)

    def int8(self) -> int:
        return self._unpack(">b", 1)

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def _take(self, n: int) -> bytes:
        raw = self.buf[self.pos : self.pos + n]
        self.pos += n
        return raw

    def nullable_string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.int16()
        return None if n < 0 else self._take(n).decode()

    def string(self) -> str:
        """A string; a null one reads as ``""``."""
        return self.nullable_string() or ""

    def uuid_(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16))

    def bytes_(self) -> bytes:
        n = self.uvarint() - 1 if self.flexible else self.int32()
        return b"" if n < 0 else self._take(n)

    def array_length(self) -> int:
        return self.uvarint() - 1 if self.flexible else self.int32()

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()
