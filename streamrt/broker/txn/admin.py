"""DescribeTransactions and ListTransactions (KIP-664): read-only views of the coordinator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamrt.broker.txn.metadata import TransactionMetadata
from streamrt.broker.txn.responses import not_found_state, timestamp
from streamrt.broker.txn.state import TxnState
from streamrt.errors import ErrorCode
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext

__all__ = ("describe_transactions", "list_transactions")


def _response(ctx: RequestContext, **values: Any) -> Any:
    return build(codec_for(ctx.api_key, ctx.api_version).response_cls, throttle_time=0, **values)


def describe_transactions(
    transactions: Mapping[str, TransactionMetadata], ctx: RequestContext, request: Any
) -> Any:
    """Per id: state, timeout, start time, producer id/epoch and partitions; unknown or Dead
    ids get TRANSACTIONAL_ID_NOT_FOUND."""
    states = []
    for txn_id in request.transactional_ids:
        md = transactions.get(txn_id)
        if md is None or md.state is TxnState.DEAD:
            states.append(not_found_state(txn_id, ErrorCode.transactional_id_not_found))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(md.partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            {
                "error_code": ErrorCode.none,
                "transactional_id": txn_id,
                "transaction_state": md.state.wire_name,
                "transaction_timeout": md.timeout_ms,
                "transaction_start_time": timestamp(md.start_ms),
                "producer_id": md.producer_id,
                "producer_epoch": md.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            }
        )
    return _response(ctx, transaction_states=states)


def list_transactions(
    transactions: Mapping[str, TransactionMetadata], now_ms: int, ctx: RequestContext, request: Any
) -> Any:
    """Filtered by state names (unknown ones are echoed back), producer ids and, from v1, a
    minimum running time; Dead ids are never listed."""
    wanted: set[TxnState] = set()
    unknown: list[str] = []
    for name in request.state_filters:
        state = TxnState.from_wire_name(name)
        if state is None:
            unknown.append(name)
        else:
            wanted.add(state)
    pids = set(request.producer_id_filters)
    min_duration = int(getattr(request, "duration_filter", -1))
    listed = [
        {
            "transactional_id": txn_id,
            "producer_id": md.producer_id,
            "transaction_state": md.state.wire_name,
        }
        for txn_id, md in sorted(transactions.items())
        if md.state is not TxnState.DEAD
        and (not request.state_filters or md.state in wanted)
        and (not pids or md.producer_id in pids)
        and (min_duration < 0 or (md.start_ms >= 0 and now_ms - md.start_ms >= min_duration))
    ]
    return _response(
        ctx, error_code=ErrorCode.none, unknown_state_filters=unknown, transaction_states=listed
    )
