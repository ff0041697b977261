"""``__transaction_state`` records: v0 as written, v1 (flexible, Kafka 4.x) readable."""

from __future__ import annotations

import struct

from streamrt.broker.txn.records import (
    TransactionLogValue,
    decode_key,
    decode_value,
    txn_record,
    txn_tombstone,
)
from streamrt.broker.txn.state import TxnState


def test_v0_round_trip_and_key_layout() -> None:
    value = TransactionLogValue(
        42, 3, 60_000, TxnState.ONGOING, (("b", 1), ("a", 0), ("a", 2)), 7, 5
    )
    record = txn_record("my-id", value)
    assert record.key == struct.pack(">hh", 0, 5) + b"my-id"
    assert decode_key(record.key) == "my-id"
    decoded = decode_value(record.value or b"")
    assert decoded.partitions == (("a", 0), ("a", 2), ("b", 1))
    assert (decoded.producer_id, decoded.producer_epoch, decoded.state) == (42, 3, TxnState.ONGOING)
    assert (decoded.last_update_ms, decoded.start_ms, decoded.timeout_ms) == (7, 5, 60_000)
    empty = decode_value(
        txn_record("x", TransactionLogValue(1, 0, 1, TxnState.EMPTY, None, 1, -1)).value or b""
    )
    assert empty.partitions is None
    assert txn_tombstone("x").value is None
    assert decode_key(struct.pack(">hh", 9, 1) + b"x") is None  # unknown key version: skipped


def test_reads_flexible_v1_values_with_tagged_fields() -> None:
    raw = (
        struct.pack(">hqhib", 1, 9, 2, 1000, TxnState.PREPARE_COMMIT.value)
        + bytes([2])  # compact array: one topic
        + bytes([2])
        + b"t"  # compact string "t"
        + bytes([2])
        + struct.pack(">i", 4)  # compact array: partition 4
        + bytes([0])  # topic tagged fields
        + struct.pack(">qq", 11, 10)
        + bytes([1, 0, 8])
        + struct.pack(">q", -1)  # one tagged field: PreviousProducerId
    )
    value = decode_value(raw)
    assert (value.state, value.partitions, value.start_ms) == (
        TxnState.PREPARE_COMMIT,
        (("t", 4),),
        10,
    )
