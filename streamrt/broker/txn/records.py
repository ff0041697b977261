"""``__transaction_state`` record factories and serde (Kafka's ``TransactionLogKey/Value``).

Key: int16 version 0, STRING transactional id. Value v0 (non-flexible, what Kafka writes while
``transaction.version`` < 1): ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs
int32, TransactionStatus int8, TransactionPartitions (nullable array of {Topic STRING,
PartitionIds [int32]}), TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs
int64. v1 (flexible, tagged fields) is read too, so a log written by Kafka 4.x loads.
"""

from __future__ import annotations

import dataclasses
import struct

from streamrt.broker.coordination.record_reader import RecordReader
from streamrt.broker.txn.state import TxnState

__all__ = (
    "TransactionLogValue",
    "TxnRecord",
    "decode_key",
    "decode_value",
    "txn_record",
    "txn_tombstone",
)

KEY_VERSION = 0
VALUE_VERSION = 0

TopicPartition = tuple[str, int]


@dataclasses.dataclass(frozen=True, slots=True)
class TxnRecord:
    """One record for ``__transaction_state``; ``value is None`` is a tombstone."""

    key: bytes
    value: bytes | None
    transactional_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    #: ``None`` is what Kafka writes for Empty (no transaction yet).
    partitions: tuple[TopicPartition, ...] | None
    last_update_ms: int
    start_ms: int


def _key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return struct.pack(">hh", KEY_VERSION, len(raw)) + raw


def encode_value(value: TransactionLogValue) -> bytes:
    """Value v0 (non-flexible): what Kafka writes while ``transaction.version`` < 1."""
    parts = [
        struct.pack(
            ">hqhib",
            VALUE_VERSION,
            value.producer_id,
            value.producer_epoch,
            value.timeout_ms,
            value.state.value,
        )
    ]
    if value.partitions is None:
        parts.append(struct.pack(">i", -1))
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(value.partitions):
            by_topic.setdefault(topic, []).append(partition)
        parts.append(struct.pack(">i", len(by_topic)))
        for topic, partitions in by_topic.items():
            raw = topic.encode()
            parts.append(struct.pack(">h", len(raw)) + raw)
            parts.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
    parts.append(struct.pack(">qq", value.last_update_ms, value.start_ms))
    return b"".join(parts)


def txn_record(transactional_id: str, value: TransactionLogValue) -> TxnRecord:
    return TxnRecord(_key(transactional_id), encode_value(value), transactional_id)


def txn_tombstone(transactional_id: str) -> TxnRecord:
    """Kafka writes one when an idle id expires (``transactional.id.expiration.ms``)."""
    return TxnRecord(_key(transactional_id), None, transactional_id)


def decode_key(key: bytes) -> str | None:
    """The transactional id; ``None`` for a key version this broker does not know."""
    r = RecordReader(key)
    if r.version != KEY_VERSION:
        return None
    return r.string()


def decode_value(value: bytes) -> TransactionLogValue:
    r = RecordReader(value)
    if r.version not in (0, 1):
        raise ValueError(f"unknown TransactionLogValue version {r.version}")
    r.flexible = r.version >= 1
    producer_id = r.int64()
    producer_epoch = r.int16()
    timeout_ms = r.int32()
    state = TxnState(r.int8())
    n = r.array_length()
    partitions: tuple[TopicPartition, ...] | None = None
    if n >= 0:
        out: list[TopicPartition] = []
        for _ in range(n):
            topic = r.string()
            out.extend((topic, r.int32()) for _ in range(r.array_length()))
            r.skip_tagged_fields()
        partitions = tuple(out)
    last_update_ms = r.int64()
    start_ms = r.int64()
    r.skip_tagged_fields()
    return TransactionLogValue(
        producer_id, producer_epoch, timeout_ms, state, partitions, last_update_ms, start_ms
    )
