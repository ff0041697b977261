"""ListOffsets and OffsetForLeaderEpoch: where a partition's log starts, ends, and by time.

The leader epoch is always 0: one node, never a leader change.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import DESCRIBE, TOPIC, require
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.LIST_OFFSETS, 1, 10, list_offsets)
    table.register(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, offset_for_leader_epoch)


def _lookup(
    core: BrokerCore, topic: str, partition: int, ts: int, read_committed: bool = False
) -> tuple[int, int]:
    log = core.logs.log(topic, partition)
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if ts == LATEST:  # read_committed consumers see the last stable offset as the end
        return (log.last_stable_offset if read_committed else log.log_end_offset), -1
    if ts == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
        if found is None:
            return -1, -1
        return found
    if ts < 0:
        raise KafkaError(ErrorCode.invalid_request, f"unsupported special timestamp {ts}")
    hit = log.offset_for_timestamp(ts)
    if hit is None:
        return -1, -1  # Kafka: no record at or after the timestamp
    return hit


async def list_offsets(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    read_committed = int(getattr(req, "isolation_level", 0)) == 1
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "error_code": 0,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": 0,
            }
            try:
                require(core, ctx, DESCRIBE, TOPIC, t.name)
                offset, ts = _lookup(core, t.name, p.partition_index, p.timestamp, read_committed)
                entry.update(offset=offset, timestamp=ts)
            except KafkaError as exc:
                entry.update(error_code=exc.code, leader_epoch=-1)
            parts.append(entry)
        topics.append({"name": t.name, "partitions": parts})
    return respond(ctx, throttle_time=0, topics=topics)


async def offset_for_leader_epoch(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            entry: dict[str, Any] = {
                "error_code": 0,
                "partition": p.partition,
                "leader_epoch": -1,
                "end_offset": -1,
            }
            try:
                require(core, ctx, DESCRIBE, TOPIC, t.topic)
                log = core.logs.log(t.topic, p.partition)
                if p.leader_epoch <= 0:
                    entry.update(leader_epoch=0, end_offset=log.log_end_offset)
            except KafkaError as exc:
                entry["error_code"] = exc.code
            parts.append(entry)
        topics.append({"topic": t.topic, "partitions": parts})
    return respond(ctx, throttle_time=0, topics=topics)
