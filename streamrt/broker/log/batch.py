"""RecordBatch v2 headers: parse, validate and rewrite batches without touching their records.

The broker stores batches as the opaque bytes a client sent. Only the fixed 61-byte header is
read here (with :mod:`struct`), and the CRC32C is checked with :mod:`crc32c`. The CRC covers
bytes 21..end (attributes onwards), so rewriting ``baseOffset`` and ``partitionLeaderEpoch``
keeps it valid; setting ``LogAppendTime`` changes covered bytes and recomputes it.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator

import crc32c

from streamrt.errors import ErrorCode, KafkaError

__all__ = (
    "ATTR_CODEC_MASK",
    "ATTR_CONTROL",
    "ATTR_LOG_APPEND_TIME",
    "ATTR_TRANSACTIONAL",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchHeader",
    "increment_sequence",
    "iter_headers",
    "parse_header",
    "recompute_crc",
    "set_base_offset",
    "set_log_append_time",
    "set_max_timestamp",
)

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted in batchLength
_LEADER_EPOCH_POS = 12
_MAGIC_POS = 16
_CRC_POS = 17
_CRC_START = 21
_ATTR_POS = 21
_MAX_TS_POS = 35
_MAX_SEQUENCE = 2**31 - 1

ATTR_CODEC_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20


@dataclasses.dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fields of one batch header plus where the batch sits in its buffer."""

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def compression_type(self) -> int:
        return self.attributes & ATTR_CODEC_MASK

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    """Producer sequence numbers wrap from 2^31-1 to 0 (Kafka's ``incrementSequence``)."""
    if sequence > _MAX_SEQUENCE - increment:
        return increment - (_MAX_SEQUENCE - sequence) - 1
    return sequence + increment


def parse_header(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, position: int | None = None
) -> BatchHeader:
    """Unpack the header at ``pos`` (recorded as ``position``, default ``pos``); the caller
    checks there are ``HEADER_SIZE`` bytes."""
    return BatchHeader(pos if position is None else position, *_HEADER.unpack_from(buf, pos))


def _check_sane(h: BatchHeader, available: int) -> None:
    if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise KafkaError(ErrorCode.corrupt_message, f"batch length {h.batch_length} too small")
    if h.size > available:
        raise KafkaError(ErrorCode.corrupt_message, "batch extends past the end of the records")
    if h.last_offset_delta < 0 or h.record_count < 0:
        raise KafkaError(ErrorCode.corrupt_message, "negative offset delta or record count")


def iter_headers(
    buf: bytes | bytearray | memoryview, *, check_crc: bool = True
) -> Iterator[BatchHeader]:
    """Walk every batch of ``buf``, raising :class:`KafkaError` at the first bad one.

    ``corrupt_message`` for a truncated or insane header or a CRC mismatch,
    ``unsupported_for_message_format`` for magic other than 2.
    """
    view = memoryview(buf)
    pos = 0
    end = len(view)
    while pos < end:
        if end - pos < HEADER_SIZE:
            if end - pos > _MAGIC_POS and view[pos + _MAGIC_POS] != 2:
                raise KafkaError(ErrorCode.unsupported_for_message_format, "magic is not 2")
            raise KafkaError(ErrorCode.corrupt_message, "truncated record batch header")
        if view[pos + _MAGIC_POS] != 2:
            raise KafkaError(
                ErrorCode.unsupported_for_message_format,
                f"record batch magic {view[pos + _MAGIC_POS]}; only v2 batches are supported",
            )
        h = parse_header(view, pos)
        _check_sane(h, end - pos)
        if check_crc and crc32c.crc32c(view[pos + _CRC_START : pos + h.size]) != h.crc:
            raise KafkaError(ErrorCode.corrupt_message, f"CRC mismatch in batch at byte {pos}")
        yield h
        pos += h.size


def set_base_offset(buf: bytearray, pos: int, base_offset: int, leader_epoch: int = 0) -> None:
    """Assign the batch's offset (and leader epoch); outside the CRC, so no recompute."""
    struct.pack_into(">q", buf, pos, base_offset)
    struct.pack_into(">i", buf, pos + _LEADER_EPOCH_POS, leader_epoch)


def set_log_append_time(buf: bytearray, h: BatchHeader, now_ms: int) -> None:
    """Mark a batch as LogAppendTime with ``now_ms`` as its max timestamp, and re-CRC it."""
    struct.pack_into(">h", buf, h.position + _ATTR_POS, h.attributes | ATTR_LOG_APPEND_TIME)
    struct.pack_into(">q", buf, h.position + _MAX_TS_POS, now_ms)
    recompute_crc(buf, h.position, h.size)


def set_max_timestamp(buf: bytearray, h: BatchHeader, max_timestamp: int) -> None:
    """Correct a batch's max timestamp to its records' largest (Kafka's ``setMaxTimestamp``)."""
    struct.pack_into(">q", buf, h.position + _MAX_TS_POS, max_timestamp)
    recompute_crc(buf, h.position, h.size)


def recompute_crc(buf: bytearray, pos: int, size: int) -> None:
    crc = crc32c.crc32c(memoryview(buf)[pos + _CRC_START : pos + size])
    struct.pack_into(">I", buf, pos + _CRC_POS, crc)
