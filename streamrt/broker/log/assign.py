"""Offset assignment of validated batches, with idempotent-producer dedupe.

Kafka's ``LogValidator`` assigns offsets in place (the batch's base offset and leader epoch sit
outside the CRC), sets ``LogAppendTime`` where the topic asks for it and corrects a batch's
max timestamp to its records' largest. The producer-state check runs per batch against state
staged in ``pending``: a retried batch is answered with its first offsets instead of written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from streamrt.broker.log.batch import (
    ATTR_LOG_APPEND_TIME,
    BatchHeader,
    set_base_offset,
    set_log_append_time,
    set_max_timestamp,
)
from streamrt.broker.log.producer_state import BatchMetadata, ProducerEntry, ProducerStateManager
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("AppendPlan", "plan_append")


@dataclasses.dataclass
class AppendPlan:
    """The bytes to write, their headers as written, and the producer state to commit."""

    buf: bytearray
    kept: list[BatchHeader]
    pending: dict[int, ProducerEntry]
    duplicates: list[BatchMetadata]
    next_offset: int


def _stamp(
    buf: bytearray, h: BatchHeader, offset: int, now_ms: int, log_append: bool, max_ts: int
) -> BatchHeader:
    """Write the offset (and the timestamp fix) into ``buf``; the header as it now reads."""
    set_base_offset(buf, h.position, offset)
    if log_append:
        set_log_append_time(buf, h, now_ms)
        max_ts = now_ms
    elif max_ts != h.max_timestamp:
        set_max_timestamp(buf, h, max_ts)
    return dataclasses.replace(
        h,
        base_offset=offset,
        max_timestamp=max_ts,
        attributes=h.attributes | (ATTR_LOG_APPEND_TIME if log_append else 0),
    )


def plan_append(
    records: bytes,
    headers: Sequence[BatchHeader],
    max_timestamps: Sequence[int],
    next_offset: int,
    producers: ProducerStateManager,
    now_ms: int,
    *,
    log_append: bool,
    check_sequence: bool,
) -> AppendPlan:
    """Assign offsets from ``next_offset`` to every batch that is not a retried duplicate.

    Duplicates and new batches in one request is OUT_OF_ORDER_SEQUENCE_NUMBER, as in Kafka.
    """
    plan = AppendPlan(bytearray(records), [], {}, [], next_offset)
    for h, max_ts in zip(headers, max_timestamps, strict=True):
        cached = producers.check(h, plan.next_offset, plan.pending, check_sequence=check_sequence)
        if cached is not None:
            plan.duplicates.append(cached)
            continue
        plan.kept.append(_stamp(plan.buf, h, plan.next_offset, now_ms, log_append, max_ts))
        plan.next_offset += h.last_offset_delta + 1
    if plan.duplicates and plan.kept:
        raise KafkaError(
            ErrorCode.out_of_order_sequence_number,
            "a retried (duplicate) batch was sent together with new batches",
        )
    return plan
