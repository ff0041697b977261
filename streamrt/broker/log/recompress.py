"""Broker-side recompression: a topic's ``compression.type`` applied on append.

Kafka's ``LogValidator`` rewrites a batch when the topic's ``compression.type`` is a codec
(not ``producer``) that differs from the batch's: the records are written again with the
topic's codec, keeping offset deltas, timestamps, producer id/epoch/sequence and the
transactional flag. The records come from the validator's bounded inflation (never inflated
twice, never past its bound). Batches already in the topic's codec are kept byte for byte, so
``producer`` (the default) costs nothing. A rewritten batch is held to ``max.message.bytes``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from streamrt.broker.log.batch import recompute_crc
from streamrt.broker.log.codec import build_batch, iter_records, rebuilt
from streamrt.broker.log.validator import ValidatedBatch
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("CODECS", "needs_rewrite", "recompress")

#: ``compression.type`` values → the batch attribute codec; ``producer`` is absent (no rewrite).
CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

_LAST_OFFSET_DELTA_POS = 23


def needs_rewrite(compression_type: str, codecs: Sequence[int]) -> bool:
    """Whether a batch of any of ``codecs`` must be rewritten for the topic's codec."""
    codec = CODECS.get(compression_type)
    return codec is not None and any(c != codec for c in codecs)


def _rewrite(v: ValidatedBatch, codec: int, max_bytes: int) -> bytes:
    h = v.header
    assert v.plain is not None, "recompression needs the validator's plain batch"
    buf = build_batch(
        rebuilt(iter_records(v.plain), h.base_offset),
        codec=codec,
        transactional=h.is_transactional,
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
    )
    struct.pack_into(">i", buf, _LAST_OFFSET_DELTA_POS, h.last_offset_delta)
    recompute_crc(buf, 0, len(buf))
    if len(buf) > max_bytes:
        raise KafkaError(
            ErrorCode.message_too_large,
            f"batch recompressed to {len(buf)} bytes exceeds max.message.bytes {max_bytes}",
        )
    return bytes(buf)


def recompress(
    records: bytes, batches: Sequence[ValidatedBatch], compression_type: str, max_bytes: int
) -> bytes | None:
    """``records`` with every batch not in the topic's codec rewritten in it; ``None`` when
    no batch needs it (the caller keeps its buffer)."""
    codec = CODECS.get(compression_type)
    if codec is None or not needs_rewrite(
        compression_type, [v.header.compression_type for v in batches]
    ):
        return None
    parts = []
    for v in batches:
        h = v.header
        if h.compression_type == codec:
            parts.append(records[h.position : h.position + h.size])
        else:
            parts.append(_rewrite(v, codec, max_bytes))
    return b"".join(parts)
