"""StreamsGroupHeartbeat and StreamsGroupDescribe (KIP-1071, API keys 88 and 89), v0.

Decode, authorize (READ on the group for a heartbeat, DESCRIBE for a describe, as Kafka's
``KafkaApis``), convert to the state machine's types and hand the request to the streams-group
coordinator (``streamrt.broker.streams_group``) through the group service. Internal topics the
heartbeat asks for are created here, through the broker's topic creation, with the caller's
principal (CREATE on the topic or the cluster); a topic that cannot be created is reported as
MISSING_INTERNAL_TOPICS. With ``group.coordinator.rebalance.protocols`` lacking ``streams``
both APIs stay advertised and answer UNSUPPORTED_VERSION in the body, as Kafka's.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import (
    CREATE,
    DESCRIBE,
    GROUP,
    READ,
    TOPIC,
    allowed,
    allowed_cluster,
    authorized_operations,
)
from streamrt.broker.streams_group.describe import described, described_error
from streamrt.broker.streams_group.member import Tasks
from streamrt.broker.streams_group.requests import StreamsHeartbeatAnswer, StreamsHeartbeatRequest
from streamrt.broker.streams_group.topology import from_request
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import ms
from streamrt.wire.context import RequestContext

__all__ = ("register",)

logger = logging.getLogger(__name__)

_DISABLED = "The streams group rebalance protocol (KIP-1071) is not enabled on this broker"
_MISSING_INTERNAL_TOPICS = 3


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 0, streams_group_heartbeat)
    table.register(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 0, streams_group_describe)


def _enabled(core: BrokerCore) -> bool:
    return core.coordinator is not None and core.coordinator.streams.config.enabled


def _tasks(entries: Any) -> dict[str, frozenset[int]]:
    return {str(t.subtopology_id): frozenset(int(p) for p in t.partitions) for t in entries}


def _owned(req: Any) -> tuple[Tasks | None, bool]:
    """(owned tasks or None if unchanged, whether only some of the three lists were null)."""
    lists = (req.active_tasks, req.standby_tasks, req.warmup_tasks)
    if all(x is None for x in lists):
        return None, False
    if any(x is None for x in lists):
        return None, True
    return Tasks.of(*(_tasks(x) for x in lists)), False


def _request(ctx: RequestContext, req: Any) -> StreamsHeartbeatRequest:
    owned, partial = _owned(req)
    endpoint = req.user_endpoint
    tags = req.client_tags
    return StreamsHeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=int(req.member_epoch),
        endpoint_information_epoch=int(req.endpoint_information_epoch),
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=ms(req.rebalance_timeout),
        topology=None if req.topology is None else from_request(req.topology),
        owned=owned,
        process_id=req.process_id,
        user_endpoint=None if endpoint is None else (str(endpoint.host), int(endpoint.port)),
        client_tags=None if tags is None else tuple((kv.key, kv.value) for kv in tags),
        shutdown_application=bool(req.shutdown_application),
        client_id=ctx.client_id or "",
        client_host=ctx.client_host,
        tasks_partially_null=partial,
    )


def _error(ctx: RequestContext, member_id: str, code: ErrorCode, message: str | None) -> Any:
    return _response(ctx, StreamsHeartbeatAnswer(code, message, member_id))


async def streams_group_heartbeat(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if not _enabled(core) or core.coordinator is None:
        return _error(ctx, req.member_id, ErrorCode.unsupported_version, _DISABLED)
    if not allowed(core, ctx, READ, GROUP, req.group_id):
        return _error(ctx, req.member_id, ErrorCode.group_authorization_failed, None)
    if req.warmup_tasks:  # Kafka 4.3 refuses them before any check; we do too
        return _error(
            ctx, req.member_id, ErrorCode.invalid_request, "WarmupTasks are not supported yet."
        )
    if req.task_offsets is not None or req.task_end_offsets is not None:
        which = "TaskOffsets" if req.task_offsets is not None else "TaskEndOffsets"
        return _error(
            ctx, req.member_id, ErrorCode.invalid_request, f"{which} are not supported yet."
        )
    answer = await core.coordinator.streams_heartbeat(_request(ctx, req))
    if answer.topics_to_create:
        answer = _create_internal_topics(core, ctx, answer)
    return _response(ctx, answer)


def _create_internal_topics(
    core: BrokerCore, ctx: RequestContext, answer: StreamsHeartbeatAnswer
) -> StreamsHeartbeatAnswer:
    """Create what the topology lacks; the status names the topics that could not be."""
    failed: dict[str, str] = {}
    for name, (partitions, _replication, configs) in sorted(answer.topics_to_create.items()):
        if name in core.logs.topics():
            continue
        if not (allowed(core, ctx, CREATE, TOPIC, name) or allowed_cluster(core, ctx, CREATE)):
            failed[name] = "Unauthorized to CREATE"
            continue
        try:
            core.logs.create_topic(name, partitions, configs)
            logger.info(
                "created internal topic of streams group",
                extra=fields(topic=name, partitions=partitions),
            )
        except KafkaError as exc:
            if exc.code != ErrorCode.topic_already_exists:
                failed[name] = str(exc)
        except Exception as exc:  # a bad config value: reported, the broker goes on
            failed[name] = str(exc)
    if not failed:
        return answer
    detail = "Internal topics could not be created: " + ", ".join(
        f"{n} ({why})" for n, why in sorted(failed.items())
    )
    status = tuple(s for s in answer.status if s[0] != _MISSING_INTERNAL_TOPICS)
    return _with_status(answer, (*status, (_MISSING_INTERNAL_TOPICS, detail)))


def _with_status(
    answer: StreamsHeartbeatAnswer, status: tuple[tuple[int, str], ...]
) -> StreamsHeartbeatAnswer:
    return dataclasses.replace(answer, status=status)


def _task_list(tasks: Mapping[str, frozenset[int]]) -> list[dict[str, Any]]:
    return [
        {"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items()) if ps
    ]


def _topic_partitions(parts: Mapping[str, frozenset[int]]) -> list[dict[str, Any]]:
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(parts.items())]


def _response(ctx: RequestContext, a: StreamsHeartbeatAnswer) -> Any:
    tasks = a.tasks
    by_endpoint = None
    if a.partitions_by_user_endpoint is not None:
        by_endpoint = [
            {
                "user_endpoint": {"host": e.host, "port": e.port},
                "active_partitions": _topic_partitions(e.active),
                "standby_partitions": _topic_partitions(e.standby),
            }
            for e in a.partitions_by_user_endpoint
        ]
    return respond(
        ctx,
        throttle_time=0,
        error_code=a.error,
        error_message=a.message,
        member_id=a.member_id,
        member_epoch=a.member_epoch,
        heartbeat_interval=a.heartbeat_interval_ms,
        acceptable_recovery_lag=a.acceptable_recovery_lag,
        task_offset_interval=a.task_offset_interval_ms,
        status=[{"status_code": c, "status_detail": d} for c, d in a.status] or None,
        active_tasks=None if tasks is None else _task_list(tasks.active),
        standby_tasks=None if tasks is None else _task_list(tasks.standby),
        warmup_tasks=None if tasks is None else _task_list(tasks.warmup),
        endpoint_information_epoch=a.endpoint_information_epoch,
        partitions_by_user_endpoint=by_endpoint,
    )


async def streams_group_describe(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if not _enabled(core) or core.coordinator is None:
        groups = [
            described_error(gid, ErrorCode.unsupported_version, _DISABLED) for gid in req.group_ids
        ]
        return respond(ctx, throttle_time=0, groups=groups)
    known = core.coordinator.streams.groups
    out = []
    for gid in req.group_ids:
        group = known.get(gid)
        if not allowed(core, ctx, DESCRIBE, GROUP, gid):
            out.append(described_error(gid, ErrorCode.group_authorization_failed, None))
        elif group is None:
            out.append(
                described_error(gid, ErrorCode.group_id_not_found, f"Group {gid} not found.")
            )
        else:
            include = bool(req.include_authorized_operations)
            ops = authorized_operations(core, ctx, GROUP, gid, include)
            out.append(described(group, ops))
    return respond(ctx, throttle_time=0, groups=out)
