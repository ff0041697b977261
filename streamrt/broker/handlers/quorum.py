"""The KRaft quorum's APIs: this node is the single voter and leader of a static quorum.

There is no replicated metadata log: topic metadata lives in ``meta/``. DescribeQuorum answers
what a one-node combined-mode KRaft cluster reports: one voter, which leads, with no observers.
The quorum is static (``controller.quorum.voters``, kraft.version 0), so Add/RemoveRaftVoter get
Kafka's answer for that case, UNSUPPORTED_VERSION; UnregisterBroker knows only this node.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import ALTER, DESCRIBE, allowed_cluster
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("METADATA_TOPIC", "register")

METADATA_TOPIC = "__cluster_metadata"
_LEADER_EPOCH = 1


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DESCRIBE_QUORUM, 0, 2, describe_quorum)
    table.register(ApiKey.ADD_RAFT_VOTER, 0, 0, change_raft_voter)
    table.register(ApiKey.REMOVE_RAFT_VOTER, 0, 0, change_raft_voter)
    table.register(ApiKey.UNREGISTER_BROKER, 0, 0, unregister_broker)


def _error(ctx: RequestContext, code: ErrorCode, message: str | None) -> Any:
    return respond(ctx, throttle_time=0, error_code=code, error_message=message)


async def change_raft_voter(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """Kafka's Add/RemoveVoterHandler on a quorum without kraft.version 1 (KIP-853)."""
    if not allowed_cluster(core, ctx, ALTER):
        return _error(ctx, ErrorCode.cluster_authorization_failed, None)
    if req.cluster_id is not None and req.cluster_id != core.cluster_id:
        return _error(ctx, ErrorCode.inconsistent_cluster_id, None)
    verb = "adding" if ctx.api_key == ApiKey.ADD_RAFT_VOTER else "removing"
    return _error(
        ctx,
        ErrorCode.unsupported_version,
        f"Cluster doesn't support {verb} voter because the kraft.version feature is 0",
    )


async def unregister_broker(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """Another id is BROKER_ID_NOT_REGISTERED (Kafka's controller); this live node's own
    registration is dropped and re-made at once, as a Kafka broker re-registers on its next
    heartbeat, so the answer is NONE and nothing changes."""
    if not allowed_cluster(core, ctx, ALTER):
        return _error(ctx, ErrorCode.cluster_authorization_failed, None)
    if req.broker_id != core.node_id:
        return _error(
            ctx,
            ErrorCode.broker_id_not_registered,
            f"Broker ID {req.broker_id} is not currently registered",
        )
    return _error(ctx, ErrorCode.none, None)


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
    if not allowed_cluster(core, ctx, DESCRIBE):  # Kafka: DESCRIBE on the cluster
        code = ErrorCode.cluster_authorization_failed
        return respond(ctx, error_code=code, error_message=None, topics=[], nodes=[])
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
