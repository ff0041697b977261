"""A response carrying one error code, for any transaction API and version.

Used when the coordinator is not active (loading, stopped) and for requests refused before the
state machine sees them (TxnOffsetCommit failing produce-style verification).
"""

from __future__ import annotations

import datetime
from typing import Any

from streamrt.errors import ErrorCode
from streamrt.wire.codec import build, codec_for

__all__ = ("error_response", "not_found_state", "timestamp")

INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = 22, 24, 25, 26
TXN_OFFSET_COMMIT, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 28, 65, 66


def timestamp(ms: int) -> datetime.datetime:
    """kio's non-nullable ``datetime_i64`` for a millisecond timestamp; Kafka's -1 ("none")
    is the instant 1 ms before the epoch, which encodes back to -1."""
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def not_found_state(transactional_id: str, code: ErrorCode) -> dict[str, Any]:
    """A DescribeTransactions entry carrying only an error, as Kafka fills it."""
    return {
        "error_code": code,
        "transactional_id": transactional_id,
        "transaction_state": "",
        "transaction_timeout": 0,
        "transaction_start_time": timestamp(-1),
        "producer_id": -1,
        "producer_epoch": -1,
        "topics": [],
    }


def error_response(ctx: Any, request: Any, code: ErrorCode) -> Any:
    cls = codec_for(ctx.api_key, ctx.api_version).response_cls
    key = ctx.api_key
    if key == ADD_PARTITIONS_TO_TXN:
        results = [
            {
                "name": t.name,
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": code} for p in t.partitions
                ],
            }
            for t in request.v3_and_below_topics
        ]
        return build(cls, throttle_time=0, results_by_topic_v3_and_below=results)
    if key == TXN_OFFSET_COMMIT:
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": code} for p in t.partitions
                ],
            }
            for t in request.topics
        ]
        return build(cls, throttle_time=0, topics=topics)
    if key == DESCRIBE_TRANSACTIONS:
        states = [not_found_state(txn_id, code) for txn_id in request.transactional_ids]
        return build(cls, throttle_time=0, transaction_states=states)
    return build(
        cls,
        throttle_time=0,
        error_code=code,
        producer_id=-1,
        producer_epoch=-1,
        unknown_state_filters=[],
        transaction_states=[],
    )
