"""Replica placement on one node: ElectLeaders, partition reassignments, DescribeTopicPartitions.

Every partition has one replica, on this node, which leads it. So a preferred (or unclean)
election is never needed, the only valid assignment is this node, and no reassignment is ever
in progress: the answers Kafka gives in those states.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import (
    ALTER,
    DESCRIBE,
    TOPIC,
    allowed,
    allowed_cluster,
    authorized_operations,
)
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("check_assignment", "register")

#: Kafka's "authorized operations not requested" sentinel (Integer.MIN_VALUE).
_NO_OPERATIONS = -(2**31)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.ELECT_LEADERS, 0, 2, elect_leaders)
    table.register(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 0, alter_partition_reassignments)
    table.register(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, list_partition_reassignments)
    table.register(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, describe_topic_partitions)


def check_assignment(core: BrokerCore, replicas: list[int]) -> tuple[ErrorCode, str | None]:
    """Kafka's validation of a manual assignment against the registered brokers."""
    if not replicas:
        return ErrorCode.invalid_replica_assignment, "the replica list is empty"
    if len(set(replicas)) != len(replicas):
        return ErrorCode.invalid_replica_assignment, f"duplicate brokers in {replicas}"
    for broker in replicas:
        if broker != core.node_id:
            return (
                ErrorCode.invalid_replica_assignment,
                f"The manual partition assignment includes broker {broker}, "
                "but no such broker is registered.",
            )
    return ErrorCode.none, None


def _partition_exists(core: BrokerCore, topic: str, partition: int) -> bool:
    info = core.logs.topics().get(topic)
    return info is not None and 0 <= partition < info.num_partitions


async def elect_leaders(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """Null ``topic_partitions`` means every partition; Kafka then leaves out the partitions
    whose election was not needed, which on one node is all of them. ALTER on the cluster, as
    Kafka: else every partition (and, from v1, the response) is CLUSTER_AUTHORIZATION_FAILED."""
    results = []
    authorized = allowed_cluster(core, ctx, ALTER)
    if req.topic_partitions is not None:
        for t in req.topic_partitions:
            rows = []
            for p in t.partitions:
                if not authorized:
                    code, message = ErrorCode.cluster_authorization_failed, None
                elif _partition_exists(core, t.topic, p):
                    code = ErrorCode.election_not_needed
                    message = "the preferred replica is already the leader"
                else:
                    code = ErrorCode.unknown_topic_or_partition
                    message = f"unknown partition {t.topic}-{p}"
                rows.append({"partition_id": p, "error_code": code, "error_message": message})
            results.append({"topic": t.topic, "partition_result": rows})
    top = ErrorCode.none if authorized else ErrorCode.cluster_authorization_failed
    return respond(ctx, throttle_time=0, error_code=top, replica_election_results=results)


async def alter_partition_reassignments(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """ALTER on the cluster, as Kafka's controller requires."""
    if not allowed_cluster(core, ctx, ALTER):
        return _cluster_refusal(ctx, responses=[])
    responses = []
    for t in req.topics:
        rows = []
        for p in t.partitions:
            code: ErrorCode
            message: str | None
            if not _partition_exists(core, t.name, p.partition_index):
                code, message = ErrorCode.unknown_topic_or_partition, None
            elif p.replicas is None:
                code = ErrorCode.no_reassignment_in_progress
                message = f"no reassignment of {t.name}-{p.partition_index} to cancel"
            else:
                # The target equals the current placement: Kafka completes it at once.
                code, message = check_assignment(core, list(p.replicas))
            rows.append(
                {"partition_index": p.partition_index, "error_code": code, "error_message": message}
            )
        responses.append({"name": t.name, "partitions": rows})
    return respond(
        ctx, throttle_time=0, error_code=ErrorCode.none, error_message=None, responses=responses
    )


def _cluster_refusal(ctx: RequestContext, **empty: Any) -> Any:
    code = ErrorCode.cluster_authorization_failed
    return respond(ctx, throttle_time=0, error_code=code, error_message=None, **empty)


async def list_partition_reassignments(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """DESCRIBE on the cluster, as Kafka's controller requires."""
    if not allowed_cluster(core, ctx, DESCRIBE):
        return _cluster_refusal(ctx, topics=[])
    return respond(ctx, throttle_time=0, error_code=ErrorCode.none, error_message=None, topics=[])


def _described_partition(core: BrokerCore, index: int) -> dict[str, Any]:
    node = core.node_id
    return {
        "error_code": ErrorCode.none,
        "partition_index": index,
        "leader_id": node,
        "leader_epoch": 0,
        "replica_nodes": (node,),
        "isr_nodes": (node,),
        # Empty, not null: Apache Kafka sends lists, and the Java admin client (Kafka Streams'
        # InternalTopicManager) dereferences them without a null check.
        "eligible_leader_replicas": (),
        "last_known_elr": (),
        "offline_replicas": (),
    }


async def describe_topic_partitions(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """Topics sorted by name, at most ``response_partition_limit`` partitions, then a cursor.

    DESCRIBE on each topic, as Kafka: a named one without it answers TOPIC_AUTHORIZATION_FAILED,
    a listing leaves it out."""
    topics = core.logs.topics()
    names = sorted(t.name for t in req.topics) if req.topics else sorted(topics)
    denied = [n for n in names if not allowed(core, ctx, DESCRIBE, TOPIC, n)]
    names = [n for n in names if n not in denied]
    if not req.topics:
        denied = []
    cursor = req.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    budget = max(int(req.response_partition_limit), 1)
    out: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        info = topics.get(name)
        if info is None:
            out.append(_unknown_topic(name, ErrorCode.unknown_topic_or_partition))
            continue
        first = cursor.partition_index if cursor is not None and cursor.topic_name == name else 0
        partitions = []
        for p in range(first, info.num_partitions):
            if budget == 0:
                next_cursor = {"topic_name": name, "partition_index": p}
                break
            partitions.append(_described_partition(core, p))
            budget -= 1
        out.append(
            {
                "error_code": ErrorCode.none,
                "name": name,
                "topic_id": info.topic_id,
                "is_internal": info.internal,
                "partitions": partitions,
                "topic_authorized_operations": authorized_operations(core, ctx, TOPIC, name),
            }
        )
        if next_cursor is not None:
            break
        if budget == 0 and name != names[-1]:
            following = names[names.index(name) + 1]
            next_cursor = {"topic_name": following, "partition_index": 0}
            break
    out.extend(_unknown_topic(n, ErrorCode.topic_authorization_failed) for n in denied)
    return respond(ctx, throttle_time=0, topics=out, next_cursor=next_cursor)


def _unknown_topic(name: str, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": None,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": _NO_OPERATIONS,
    }
