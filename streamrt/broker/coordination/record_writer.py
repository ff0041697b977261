"""Writing ``__consumer_offsets`` record keys and values: Kafka's primitive encoding (the
counterpart of :mod:`record_reader`), shared by the classic and the consumer-group records."""

from __future__ import annotations

import struct
import uuid

__all__ = ("RecordWriter",)


class RecordWriter:
    """Kafka primitive encoder; ``flexible`` switches to compact strings, bytes and arrays."""

    def __init__(self, version: int, flexible: bool = False) -> None:
        self.parts: list[bytes] = [struct.pack(">h", version)]
        self.flexible = flexible

    def int8(self, v: int) -> None:
        self.parts.append(struct.pack(">b", v))

    def int16(self, v: int) -> None:
        self.parts.append(struct.pack(">h", v))

    def int32(self, v: int) -> None:
        self.parts.append(struct.pack(">i", v))

    def int64(self, v: int) -> None:
        self.parts.append(struct.pack(">q", v))

    def uvarint(self, v: int) -> None:
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        self.parts.append(bytes(out))

    def string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0) if self.flexible else self.int16(-1)
            return
        raw = v.encode()
        self.uvarint(len(raw) + 1) if self.flexible else self.int16(len(raw))
        self.parts.append(raw)

    def uuid_(self, v: uuid.UUID) -> None:
        self.parts.append(v.bytes)

    def bytes_(self, v: bytes) -> None:
        self.uvarint(len(v) + 1) if self.flexible else self.int32(len(v))
        self.parts.append(v)

    def array_length(self, n: int) -> None:
        self.uvarint(n + 1) if self.flexible else self.int32(n)

    def tagged_fields(self) -> None:
        if self.flexible:
            self.uvarint(0)

    def done(self) -> bytes:
        return b"".join(self.parts)
