"""Broker-side recompression: a topic's ``compression.type`` applied on append.

Kafka's ``LogValidator`` rewrites a batch when the topic's ``compression.type`` is a codec
(not ``producer``) that differs from the batch's: the records are decoded and written again
with the topic's codec, keeping offsets deltas, timestamps, producer id/epoch/sequence and the
transactional flag. Batches already in the topic's codec, and control batches (refused later
by validation), are kept byte for byte, so ``producer`` (the default) costs nothing.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from aiokafka.errors import UnsupportedCodecError
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from streamrt.broker.log.batch import BatchHeader, recompute_crc
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("CODECS", "recompress")

#: ``compression.type`` values → the batch attribute codec; ``producer`` is absent (no rewrite).
CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

_LAST_OFFSET_DELTA_POS = 23
_BATCH_SIZE_UNBOUNDED = 2**31 - 1


def _rewrite(data: bytes, h: BatchHeader, codec: int) -> bytes:
    try:
        records = list(DefaultRecordBatch(data))
    except UnsupportedCodecError as exc:
        raise KafkaError(ErrorCode.unsupported_compression_type, str(exc)) from None
    except Exception as exc:  # a malformed record inside the batch
        raise KafkaError(ErrorCode.corrupt_message, f"cannot read records: {exc}") from None
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=int(h.is_transactional),
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
        batch_size=_BATCH_SIZE_UNBOUNDED,
    )
    for r in records:
        builder.append(
            r.offset - h.base_offset,
            timestamp=r.timestamp,
            key=r.key,
            value=r.value,
            headers=list(r.headers),
        )
    try:
        buf = builder.build()
    except UnsupportedCodecError as exc:
        raise KafkaError(ErrorCode.unsupported_compression_type, str(exc)) from None
    struct.pack_into(">i", buf, _LAST_OFFSET_DELTA_POS, h.last_offset_delta)
    recompute_crc(buf, 0, len(buf))
    return bytes(buf)


def recompress(records: bytes, headers: Sequence[BatchHeader], codec: int) -> bytes | None:
    """``records`` with every data batch not in ``codec`` rewritten in it; ``None`` when no
    batch needs it (the caller keeps its buffer)."""
    if all(h.compression_type == codec or h.is_control for h in headers):
        return None
    parts = []
    for h in headers:
        data = records[h.position : h.position + h.size]
        if h.compression_type == codec or h.is_control:
            parts.append(bytes(data))
        else:
            parts.append(_rewrite(bytes(data), h, codec))
    return b"".join(parts)
