"""Every client batch checked as Kafka's ``LogValidator`` does, before anything is appended.

Headers (framing, magic, CRC) were checked by :func:`batch.iter_headers`; here each batch is
checked against its own records: sizes (``max.message.bytes``, ``segment.bytes``), the offset
range and record count (``lastOffsetDelta + 1 == count`` and exactly ``count`` records with
offset deltas ``0..count-1``), control batches and sequence numbers from clients, timestamps
(``message.timestamp.type``, ``message.timestamp.before.max.ms`` / ``after.max.ms``, per
record), keys on compacted topics. Compressed records are inflated through :mod:`inflate`,
bounded by :func:`uncompressed_limit`, so a compression bomb costs at most that much.

Error codes are Kafka's: CORRUPT_MESSAGE (unreadable bytes), INVALID_RECORD (records that lie
about themselves), INVALID_TIMESTAMP, MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE (sizes).
Where Kafka would silently rewrite a batch (record offset deltas not ``0..n-1``), streamrt
refuses it with INVALID_RECORD: such a batch is not one a Kafka client writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from streamrt.broker.log.batch import (
    ATTR_CODEC_MASK,
    ATTR_LOG_APPEND_TIME,
    HEADER_SIZE,
    BatchHeader,
    iter_headers,
)
from streamrt.broker.log.codec import Record, iter_records
from streamrt.broker.log.inflate import inflate
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("UNCOMPRESSED_FLOOR", "ValidatedBatch", "uncompressed_limit", "validate")

#: The least a batch's records may inflate to; ``max.message.bytes`` when that is larger.
UNCOMPRESSED_FLOOR = 32 << 20
_NO_TIMESTAMP = -1
_ATTR_POS = 21


@dataclasses.dataclass(frozen=True, slots=True)
class ValidatedBatch:
    """A batch that passed: its header, the largest record timestamp, and (on request) the
    batch with its records uncompressed, for recompression without inflating twice."""

    header: BatchHeader
    max_timestamp: int
    plain: bytes | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class _Rules:
    """The topic config the checks read, resolved once per append."""

    max_message_bytes: int
    segment_bytes: int
    create_time: bool
    before_ms: int
    after_ms: int
    compacted: bool
    now_ms: int
    client: bool

    @classmethod
    def of(cls, config: Mapping[str, Any], now_ms: int, client: bool) -> _Rules:
        return cls(
            max_message_bytes=config["max.message.bytes"],
            segment_bytes=config["segment.bytes"],
            create_time=config["message.timestamp.type"] == "CreateTime",
            before_ms=config["message.timestamp.before.max.ms"],
            after_ms=config["message.timestamp.after.max.ms"],
            compacted="compact" in config["cleanup.policy"],
            now_ms=now_ms,
            client=client,
        )


def uncompressed_limit(config: Mapping[str, Any]) -> int:
    """Bytes one batch's records may inflate to: ``max(max.message.bytes, 32 MiB)``."""
    return max(int(config["max.message.bytes"]), UNCOMPRESSED_FLOOR)


def validate(
    records: bytes,
    config: Mapping[str, Any],
    now_ms: int,
    *,
    client: bool = True,
    keep_plain: bool = False,
) -> list[ValidatedBatch]:
    """Check every batch of a produce request's ``records``; raise :class:`KafkaError` at the
    first bad one (then nothing of the request is appended).

    ``client=False`` is a coordinator's own append (Kafka's ``AppendOrigin.COORDINATOR``):
    producer ids without sequence numbers are allowed.
    """
    headers = list(iter_headers(records))
    if not headers:
        raise KafkaError(ErrorCode.invalid_record, "produce request holds no record batch")
    rules = _Rules.of(config, now_ms, client)
    limit = uncompressed_limit(config)
    out = []
    for h in headers:
        _check_header(h, rules)
        data = records[h.position : h.position + h.size]
        plain = _plain(data, h, limit)
        max_ts = _check_records(plain, h, rules)
        out.append(ValidatedBatch(h, max_ts, plain if keep_plain else None))
    return out


def _check_header(h: BatchHeader, rules: _Rules) -> None:
    """Kafka's ``validateBatch``: sizes, offset range vs count, control and sequence fields."""
    if h.size > rules.max_message_bytes:
        raise KafkaError(
            ErrorCode.message_too_large,
            f"batch of {h.size} bytes exceeds max.message.bytes {rules.max_message_bytes}",
        )
    if h.size > rules.segment_bytes:
        raise KafkaError(
            ErrorCode.record_list_too_large,
            f"batch of {h.size} bytes exceeds segment.bytes {rules.segment_bytes}",
        )
    if h.record_count <= 0 or h.record_count != h.last_offset_delta + 1:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"record count {h.record_count} != last offset delta {h.last_offset_delta} + 1",
        )
    if h.is_control:
        raise KafkaError(ErrorCode.invalid_record, "clients may not send control batches")
    if rules.client and h.producer_id >= 0 and h.base_sequence < 0:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"invalid sequence number {h.base_sequence} for producer id {h.producer_id}",
        )
    if h.attributes & ATTR_LOG_APPEND_TIME:
        raise KafkaError(
            ErrorCode.invalid_timestamp, "producers may not set the LogAppendTime timestamp type"
        )


def _plain(data: bytes, h: BatchHeader, limit: int) -> bytes:
    """The batch with its records uncompressed (bounded by ``limit``); ``data`` itself when
    they are not compressed."""
    codec = h.compression_type
    if codec == 0:
        return data
    inflated = inflate(codec, data[HEADER_SIZE:], limit)
    head = bytearray(data[:HEADER_SIZE])
    head[_ATTR_POS + 1] &= ~ATTR_CODEC_MASK & 0xFF
    return bytes(head) + inflated


def _check_records(plain: bytes, h: BatchHeader, rules: _Rules) -> int:
    """Walk the records once: count, offset deltas, timestamps, keys; the max timestamp."""
    expected = h.base_offset
    max_ts = _NO_TIMESTAMP
    for r in iter_records(plain):
        if r.offset != expected:
            raise KafkaError(
                ErrorCode.invalid_record,
                f"record offset delta {r.offset - h.base_offset} where "
                f"{expected - h.base_offset} was due",
            )
        expected += 1
        _check_record(r, rules)
        max_ts = max(max_ts, r.timestamp)
    if expected - h.base_offset != h.record_count:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"batch holds {expected - h.base_offset} records, its header says {h.record_count}",
        )
    return max_ts


def _check_record(r: Record, rules: _Rules) -> None:
    if rules.compacted and r.key is None:
        raise KafkaError(ErrorCode.invalid_record, "compacted topic: every record needs a key")
    ts = r.timestamp
    if not rules.create_time or ts == _NO_TIMESTAMP:
        return
    if rules.now_ms - ts > rules.before_ms or ts - rules.now_ms > rules.after_ms:
        raise KafkaError(
            ErrorCode.invalid_timestamp,
            f"record timestamp {ts} outside message.timestamp.before.max.ms="
            f"{rules.before_ms} / after.max.ms={rules.after_ms} of the broker time "
            f"{rules.now_ms}",
        )
