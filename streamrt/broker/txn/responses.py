"""A response carrying one error code, for any transaction API and version.

Used when the coordinator is not active (loading, stopped) and for requests refused before the
state machine sees them (TxnOffsetCommit failing produce-style verification).
"""

from __future__ import annotations

import datetime
from typing import Any

from streamrt.errors import ErrorCode
from streamrt.wire.error_responses import error_response as wire_error_response

__all__ = ("error_response", "not_found_state", "timestamp")


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
    """The one error-response builder (``streamrt.wire.error_responses``), for transaction APIs."""
    return wire_error_response(ctx, request, code)
