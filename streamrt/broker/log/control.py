"""Transaction markers: the COMMIT/ABORT control batches the coordinator writes into partitions.

A marker is a RecordBatch v2 with attributes transactional + control (0x30), the transaction's
producer id and epoch, base sequence -1 and one record whose key is (version 0, type) and whose
value is (version 0, coordinator epoch) — Kafka's ``EndTransactionMarker``. Clients never send
one; readers skip them; the log uses them to end a producer's open transaction.
"""

from __future__ import annotations

import dataclasses
import struct

import crc32c

from streamrt.broker.log.batch import ATTR_CONTROL, ATTR_TRANSACTIONAL, HEADER_SIZE

__all__ = ("ABORT", "COMMIT", "Marker", "build_marker_batch", "marker_is_commit", "parse_marker")

ABORT, COMMIT = 0, 1
_HEADER = struct.Struct(">qiibIhiqqqhii")
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
_NO_SEQUENCE = -1


@dataclasses.dataclass(frozen=True, slots=True)
class Marker:
    """What a control record says: commit or abort, and the coordinator epoch that wrote it."""

    commit: bool
    coordinator_epoch: int


def _varint(value: int) -> bytes:
    """Kafka's zig-zag varint (used inside records)."""
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def build_marker_batch(
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytes:
    """One control batch holding one end-transaction marker record, CRC included."""
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _VALUE.pack(0, coordinator_epoch)
    body = (
        b"\x00"  # record attributes
        + _varint(0)  # timestamp delta
        + _varint(0)  # offset delta
        + _varint(len(key))
        + key
        + _varint(len(value))
        + value
        + _varint(0)  # no headers
    )
    record = _varint(len(body)) + body
    batch_length = HEADER_SIZE - 12 + len(record)
    buf = bytearray(
        _HEADER.pack(
            base_offset,
            batch_length,
            0,  # partition leader epoch
            2,  # magic
            0,  # crc, set below
            ATTR_TRANSACTIONAL | ATTR_CONTROL,
            0,  # last offset delta
            timestamp_ms,
            timestamp_ms,
            producer_id,
            producer_epoch,
            _NO_SEQUENCE,
            1,
        )
    )
    buf += record
    struct.pack_into(">I", buf, 17, crc32c.crc32c(memoryview(buf)[21:]))
    return bytes(buf)


def marker_is_commit(key: bytes) -> bool | None:
    """From a control record's key: True for COMMIT, False for ABORT, None for other types."""
    if len(key) < _KEY.size:
        return None
    _, kind = _KEY.unpack_from(key)
    return None if kind not in (ABORT, COMMIT) else kind == COMMIT


def parse_marker(batch: bytes) -> Marker | None:
    """The marker of a control batch (whole batch bytes); ``None`` if it is another control type
    (KRaft's) or cannot be read."""
    try:
        pos = HEADER_SIZE
        _, pos = _read_varint(batch, pos)  # record length
        pos += 1  # attributes
        _, pos = _read_varint(batch, pos)  # timestamp delta
        _, pos = _read_varint(batch, pos)  # offset delta
        key_len, pos = _read_varint(batch, pos)
        if key_len < 4:
            return None
        _, kind = _KEY.unpack_from(batch, pos)
        pos += key_len
        if kind not in (ABORT, COMMIT):
            return None
        value_len, pos = _read_varint(batch, pos)
        epoch = _VALUE.unpack_from(batch, pos)[1] if value_len >= 6 else -1
        return Marker(kind == COMMIT, epoch)
    except (IndexError, struct.error):
        return None
