"""The bytes format of a timestamped key-value store (Kafka's ``TimestampedKeyValueStore``).

The local store holds ``<timestamp: 8 bytes BE, signed><value bytes>`` so a KTable or an
aggregate keeps its row timestamp; the changelog holds the plain value bytes with the row
timestamp as the record's timestamp (Kafka's changelog format), and restoration puts the
prefix back from the record timestamp.
"""

from __future__ import annotations

import struct

__all__ = ("NO_TIMESTAMP", "decode", "encode")

_TS = struct.Struct(">q")
NO_TIMESTAMP = -1  # a row whose timestamp is unknown (a plain key-value store's)


def encode(value: bytes, timestamp: int) -> bytes:
    """The stored bytes of ``value`` with its row timestamp."""
    return _TS.pack(timestamp) + value


def decode(raw: bytes) -> tuple[bytes, int]:
    """The value bytes and the row timestamp of a stored entry."""
    return raw[_TS.size :], _TS.unpack_from(raw)[0]
