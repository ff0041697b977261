"""DeleteRecords: move partitions' log start offsets forward (Kafka Streams purges with it).

As Kafka's ``KafkaApis.handleDeleteRecordsRequest``: DELETE on each topic, else that topic's
partitions answer TOPIC_AUTHORIZATION_FAILED."""

from __future__ import annotations

import asyncio
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import DELETE, TOPIC, allowed
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DELETE_RECORDS, 0, 2, delete_records)


def _delete_one(core: BrokerCore, topic: str, partition: int, offset: int) -> int:
    info = core.logs.topics().get(topic)
    if info is not None and info.internal:
        # Kafka's ReplicaManager refuses internal topics (allowInternalTopicDeletion=false).
        raise KafkaError(ErrorCode.invalid_topic_exception, f"{topic} is an internal topic")
    return core.logs.log(topic, partition).delete_records_before(offset)


async def delete_records(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    topics = []
    for t in req.topics:
        parts = []
        authorized = allowed(core, ctx, DELETE, TOPIC, t.name)
        for p in t.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "low_watermark": -1,
                "error_code": ErrorCode.none,
            }
            if not authorized:
                entry["error_code"] = ErrorCode.topic_authorization_failed
                parts.append(entry)
                continue
            try:
                # The new start offset is fsynced before it is acknowledged: off the loop.
                low = await asyncio.to_thread(
                    _delete_one, core, t.name, p.partition_index, p.offset
                )
                entry["low_watermark"] = low
            except KafkaError as exc:
                entry["error_code"] = exc.code
            parts.append(entry)
        topics.append({"name": t.name, "partitions": parts})
    return respond(ctx, throttle_time=0, topics=topics)
