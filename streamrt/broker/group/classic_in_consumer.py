"""Classic JoinGroup, SyncGroup and Heartbeat to a consumer group: the edge between the wire and
the consumer coordinator's classic-member steps (Kafka's ``classicGroupJoin``/``Sync``/
``Heartbeat`` route by group type the same way). A JoinGroup that changes the group is answered
after its records are appended; if the append fails the group is put back and the member gets
the storage error, so a member never acts on a join that is not durable.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.consumer_group.classic_members import ClassicAnswer, ClassicJoin
from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.embedded import PROTOCOL_TYPE
from streamrt.broker.coordination.result import Result
from streamrt.broker.group import group_types
from streamrt.broker.group.coordinator import GroupCoordinator
from streamrt.broker.group.group_types import ModernOwner
from streamrt.broker.group.join_request import JoinRequest
from streamrt.errors import ErrorCode
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import heartbeat_response, join_response, sync_response

__all__ = ("heartbeat", "join", "route_heartbeat", "route_join", "route_sync", "sync")


def route_join(
    classic: GroupCoordinator,
    consumer: ConsumerGroupCoordinator,
    streams: ModernOwner,
    ctx: RequestContext,
    request: Any,
    reply: object,
) -> Result:
    """A JoinGroup: to a consumer group with members as a classic member of it, else to the
    classic coordinator (``group_types`` checks the other types)."""
    if consumer.has_members(request.group_id):
        return join(classic, consumer, ctx, request, reply)
    return group_types.join_group(classic, consumer, streams, ctx, request, reply)


def route_sync(
    classic: GroupCoordinator,
    consumer: ConsumerGroupCoordinator,
    ctx: RequestContext,
    request: Any,
    reply: object,
) -> Result:
    if request.group_id in consumer.groups:
        return sync(consumer, ctx, request)
    return classic.sync_group(ctx, request, reply)


def route_heartbeat(
    classic: GroupCoordinator, consumer: ConsumerGroupCoordinator, ctx: RequestContext, request: Any
) -> Result:
    if request.group_id in consumer.groups:
        return heartbeat(consumer, ctx, request)
    return classic.heartbeat(ctx, request)


def join(
    classic: GroupCoordinator,
    consumer: ConsumerGroupCoordinator,
    ctx: RequestContext,
    request: Any,
    reply: object,
) -> Result:
    """A JoinGroup to a consumer group with members (Kafka's ``classicGroupJoinToConsumerGroup``):
    answered at once, with the member epoch as the generation and no leader (the broker
    assigns); session timeouts are bounded as for a classic group."""
    req = JoinRequest.parse(ctx, request, reply)
    cfg = classic.config
    if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
        return Result(response=req.error(ErrorCode.invalid_session_timeout))
    group_id = req.group_id
    before = consumer.snapshot(group_id)
    answer = consumer.classic_join(
        ClassicJoin(
            group_id=group_id,
            member_id=req.member_id,
            instance_id=req.group_instance_id,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
            client_id=req.client_id,
            client_host=req.client_host,
            requires_known_member_id=(
                req.version >= 4 and not req.member_id and req.group_instance_id is None
            ),
        )
    )
    response = _join_response(req.version, answer)
    if not answer.records:
        return Result(response=response)

    def on_append(error: ErrorCode | None) -> Result:
        if error is None:
            return Result(completions=((reply, response),))
        consumer.restore(group_id, before)  # not durable: undone, timers re-armed
        return Result(completions=((reply, req.error(error)),))

    return Result(records=answer.records, on_append=on_append)


def _join_response(version: int, answer: ClassicAnswer) -> Any:
    if answer.error is not ErrorCode.none:
        return join_response(version, answer.error, answer.member_id)
    return join_response(
        version,
        ErrorCode.none,
        answer.member_id,
        generation_id=answer.generation_id,
        protocol_type=PROTOCOL_TYPE,
        protocol_name=answer.protocol_name,
    )


def sync(consumer: ConsumerGroupCoordinator, ctx: RequestContext, request: Any) -> Result:
    """A SyncGroup to a consumer group (Kafka's ``classicGroupSyncToConsumerGroup``): the
    partitions the member may own now; an assignment a (former) leader sends is ignored."""
    v = ctx.api_version
    answer = consumer.classic_sync(
        request.group_id,
        request.member_id,
        getattr(request, "group_instance_id", None),
        request.generation_id,
        getattr(request, "protocol_type", None),
        getattr(request, "protocol_name", None),
    )
    if answer.error is not ErrorCode.none:
        return Result(response=sync_response(v, answer.error))
    return Result(
        response=sync_response(
            v,
            ErrorCode.none,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=answer.protocol_name,
            assignment=answer.assignment,
        )
    )


def heartbeat(consumer: ConsumerGroupCoordinator, ctx: RequestContext, request: Any) -> Result:
    """A Heartbeat to a consumer group (Kafka's ``classicGroupHeartbeatToConsumerGroup``)."""
    answer = consumer.classic_heartbeat(
        request.group_id,
        request.member_id,
        getattr(request, "group_instance_id", None),
        request.generation_id,
    )
    return Result(response=heartbeat_response(ctx.api_version, answer.error))
