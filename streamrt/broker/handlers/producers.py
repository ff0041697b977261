"""DescribeProducers (KIP-664): each partition's active idempotent/transactional producers,
read from the log's producer state."""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import READ, TOPIC, allowed
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DESCRIBE_PRODUCERS, 0, 0, describe_producers)


def _partition(core: BrokerCore, ctx: RequestContext, topic: str, index: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "partition_index": index,
        "error_code": ErrorCode.none,
        "error_message": None,
        "active_producers": [],
    }
    if not allowed(core, ctx, READ, TOPIC, topic):
        row["error_code"] = ErrorCode.topic_authorization_failed
        return row
    try:
        log = core.logs.log(topic, index)
    except KafkaError as exc:
        row["error_code"] = exc.code
        return row
    row["active_producers"] = [
        {
            "producer_id": p.producer_id,
            "producer_epoch": p.producer_epoch,
            "last_sequence": p.last_sequence,
            "last_timestamp": p.last_timestamp,
            "coordinator_epoch": p.coordinator_epoch,
            "current_txn_start_offset": p.current_txn_start_offset,
        }
        for p in log.active_producers()
    ]
    return row


async def describe_producers(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    topics = [
        {
            "name": t.name,
            "partitions": [_partition(core, ctx, t.name, p) for p in t.partition_indexes],
        }
        for t in req.topics
    ]
    return respond(ctx, throttle_time=0, topics=topics)
