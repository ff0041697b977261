"""Hostile RecordBatches for the validator tests: lying headers, bad offset deltas, bombs.

Each starts from a real batch (aiokafka's builder, as a client writes it) and changes header
fields or the records section, then recomputes the CRC, so only the lie is wrong.
"""

from __future__ import annotations

import gzip
import struct
import time

import cramjam
import lz4.frame
import zstandard
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from streamrt.broker.log.batch import recompute_crc

_LAST_OFFSET_DELTA_POS = 23
_RECORD_COUNT_POS = 57
_ATTR_POS = 21
_HEADER_SIZE = 61


def batch(
    values: list[bytes],
    *,
    codec: int = 0,
    key: bytes | None = b"k",
    timestamp: int | None = None,
    deltas: list[int] | None = None,
) -> bytearray:
    """A client batch of ``values`` (offset deltas ``deltas``, default 0..n-1), stamped now
    unless ``timestamp`` is given (an old stamp makes retention delete the segment)."""
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 30)
    for i, value in enumerate(values):
        delta = i if deltas is None else deltas[i]
        builder.append(delta, timestamp=timestamp, key=key, value=value, headers=[])
    buf = builder.build()
    if deltas is not None:  # the builder derives lastOffsetDelta from the last record: restore
        struct.pack_into(">i", buf, _LAST_OFFSET_DELTA_POS, len(values) - 1)
        recompute_crc(buf, 0, len(buf))
    return buf


def lie_count(buf: bytearray, count: int, last_offset_delta: int | None = None) -> bytearray:
    """Claim ``count`` records (and a matching lastOffsetDelta unless given)."""
    out = bytearray(buf)
    delta = count - 1 if last_offset_delta is None else last_offset_delta
    struct.pack_into(">i", out, _RECORD_COUNT_POS, count)
    struct.pack_into(">i", out, _LAST_OFFSET_DELTA_POS, delta)
    recompute_crc(out, 0, len(out))
    return out


def _compress(codec: int, data: bytes) -> bytes:
    if codec == 1:
        return gzip.compress(data, 6)
    if codec == 2:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == 3:
        return lz4.frame.compress(data)
    return zstandard.ZstdCompressor().compress(data)


def with_records_section(header_of: bytearray, section: bytes, codec: int) -> bytearray:
    """``header_of``'s header over a new records section compressed with ``codec``."""
    out = bytearray(header_of[:_HEADER_SIZE]) + _compress(codec, section)
    attrs = struct.unpack_from(">h", out, _ATTR_POS)[0]
    struct.pack_into(">h", out, _ATTR_POS, (attrs & ~0x07) | codec)
    struct.pack_into(">i", out, 8, len(out) - 12)
    recompute_crc(out, 0, len(out))
    return out


def bomb(codec: int, inflated: int) -> bytearray:
    """One record whose header is sane but whose records section inflates to ``inflated``
    bytes of zeros (a compression bomb)."""
    return with_records_section(batch([b"v"]), b"\x00" * inflated, codec)
