"""DescribeQuorum: this node is the single voter and leader of the KRaft metadata quorum.

There is no replicated metadata log: topic metadata lives in ``meta/``. The answer is what a
one-node combined-mode KRaft cluster reports: one voter, which leads, with no observers.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("METADATA_TOPIC", "register")

METADATA_TOPIC = "__cluster_metadata"
_LEADER_EPOCH = 1


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DESCRIBE_QUORUM, 0, 2, describe_quorum)


def _partition(core: BrokerCore, index: int, now_ms: int) -> dict[str, Any]:
    if index != 0:
        return {
            "partition_index": index,
            "error_code": ErrorCode.unknown_topic_or_partition,
            "error_message": f"{METADATA_TOPIC} has only partition 0",
            "leader_id": -1,
            "leader_epoch": -1,
            "high_watermark": -1,
            "current_voters": [],
            "observers": [],
        }
    voter = {
        "replica_id": core.node_id,
        "replica_directory_id": None,
        "log_end_offset": 0,
        "last_fetch_timestamp": now_ms,
        "last_caught_up_timestamp": now_ms,
    }
    return {
        "partition_index": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "leader_id": core.node_id,
        "leader_epoch": _LEADER_EPOCH,
        "high_watermark": 0,
        "current_voters": [voter],
        "observers": [],
    }


async def describe_quorum(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    now = core.clock.now_ms()
    topics = []
    for t in req.topics:
        if t.topic_name != METADATA_TOPIC:
            # Kafka's KafkaRaftClient: a quorum it does not host is UNKNOWN_TOPIC_OR_PARTITION.
            return respond(
                ctx,
                error_code=ErrorCode.unknown_topic_or_partition,
                error_message=f"no quorum for topic {t.topic_name!r}",
                topics=[],
                nodes=[],
            )
        topics.append(
            {
                "topic_name": t.topic_name,
                "partitions": [_partition(core, p.partition_index, now) for p in t.partitions],
            }
        )
    nodes = [
        {
            "node_id": core.node_id,
            "listeners": [{"name": "PLAINTEXT", "host": core.host, "port": core.port}],
        }
    ]
    return respond(ctx, error_code=ErrorCode.none, error_message=None, topics=topics, nodes=nodes)
