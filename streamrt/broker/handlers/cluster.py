"""ApiVersions, Metadata, FindCoordinator and DescribeCluster: how clients find this node."""

from __future__ import annotations

import logging
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import (
    CLUSTER,
    CREATE,
    DESCRIBE,
    GROUP,
    NOT_REQUESTED,
    TOPIC,
    TRANSACTIONAL_ID,
    allowed,
    authorized_operations,
    require,
)
from streamrt.broker.security.acls import CLUSTER_NAME
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

logger = logging.getLogger(__name__)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.API_VERSIONS, 0, 4, _api_versions(table))
    table.register(ApiKey.METADATA, 0, 12, metadata)
    table.register(ApiKey.FIND_COORDINATOR, 0, 6, find_coordinator)
    table.register(ApiKey.DESCRIBE_CLUSTER, 0, 1, describe_cluster)


def _api_versions(table: ApiTable) -> Any:
    async def api_versions(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
        keys = [
            {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in table.ranges()
        ]
        return respond(ctx, error_code=0, api_keys=keys, throttle_time=0)

    return api_versions


def _partitions(n: int, node_id: int) -> list[dict[str, Any]]:
    return [
        {
            "error_code": 0,
            "partition_index": p,
            "leader_id": node_id,
            "leader_epoch": 0,
            "replica_nodes": (node_id,),
            "isr_nodes": (node_id,),
            "offline_replicas": (),
        }
        for p in range(n)
    ]


async def metadata(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    topics = core.logs.topics()
    requested: list[str] | None
    if req.topics is None or (ctx.api_version == 0 and not req.topics):
        requested = None  # all topics
    else:
        requested = [t.name for t in req.topics if t.name is not None]
        # v10+: topics asked for by id (KIP-516; the consumer protocol assigns by id)
        wanted_ids = [t.topic_id for t in req.topics if t.name is None and t.topic_id]
        if wanted_ids:
            return _metadata_by_id(core, ctx, req, topics, wanted_ids)
    allow_create = bool(getattr(req, "allow_auto_topic_creation", True)) and bool(
        core.config["auto.create.topics.enable"]
    )
    out = []
    for name in sorted(topics) if requested is None else requested:
        info = topics.get(name)
        if not allowed(core, ctx, DESCRIBE, TOPIC, name):  # unlisted, or an error if asked for
            if requested is not None:
                out.append(_topic_error(name, ErrorCode.topic_authorization_failed))
            continue
        if info is None and allow_create:
            try:
                require(core, ctx, CREATE, TOPIC, name, or_cluster=True)
                info = core.logs.create_topic(name, int(core.config["num.partitions"]))
                logger.info("auto-created topic %s", name)
            except KafkaError as exc:
                out.append(_topic_error(name, exc.code))
                continue
        if info is None:
            out.append(_topic_error(name, ErrorCode.unknown_topic_or_partition))
            continue
        out.append(
            {
                "error_code": 0,
                "name": info.name,
                "topic_id": info.topic_id,
                "is_internal": info.internal,
                "partitions": _partitions(info.num_partitions, core.node_id),
                "topic_authorized_operations": authorized_operations(
                    core, ctx, TOPIC, info.name, _asked(req, "include_topic_authorized_operations")
                ),
            }
        )
    return _metadata_response(core, ctx, req, out)


def _metadata_by_id(
    core: BrokerCore, ctx: RequestContext, req: Any, topics: Any, wanted: list[Any]
) -> Any:
    """Topics named by id: never auto-created; an unknown or hidden id is UNKNOWN_TOPIC_ID
    or TOPIC_AUTHORIZATION_FAILED with a null name, as Kafka answers."""
    names = {info.topic_id: name for name, info in topics.items()}
    out = []
    for topic_id in wanted:
        name = names.get(topic_id)
        if name is None or not allowed(core, ctx, DESCRIBE, TOPIC, name):
            code = (
                ErrorCode.unknown_topic_id if name is None else ErrorCode.topic_authorization_failed
            )
            out.append({**_topic_error("", code), "name": None, "topic_id": topic_id})
            continue
        info = topics[name]
        out.append(
            {
                "error_code": 0,
                "name": info.name,
                "topic_id": info.topic_id,
                "is_internal": info.internal,
                "partitions": _partitions(info.num_partitions, core.node_id),
                "topic_authorized_operations": authorized_operations(
                    core, ctx, TOPIC, info.name, _asked(req, "include_topic_authorized_operations")
                ),
            }
        )
    return _metadata_response(core, ctx, req, out)


def _metadata_response(core: BrokerCore, ctx: RequestContext, req: Any, out: list[Any]) -> Any:
    host, port = core.endpoint(ctx)
    return respond(
        ctx,
        throttle_time=0,
        brokers=[{"node_id": core.node_id, "host": host, "port": port, "rack": None}],
        cluster_id=core.cluster_id,
        controller_id=core.node_id,
        topics=out,
        cluster_authorized_operations=_cluster_operations(core, ctx, req),
    )


def _cluster_operations(core: BrokerCore, ctx: RequestContext, req: Any) -> int:
    """Kafka's Metadata and DescribeCluster: 0 without DESCRIBE on the cluster."""
    if not _asked(req, "include_cluster_authorized_operations"):
        return NOT_REQUESTED
    if not allowed(core, ctx, DESCRIBE, CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(core, ctx, CLUSTER, CLUSTER_NAME)


def _asked(req: Any, flag: str) -> bool:
    """Did the request ask for authorized operations (KIP-430; absent before Metadata v8)?"""
    return bool(getattr(req, flag, False))


def _topic_error(name: str, code: ErrorCode) -> dict[str, Any]:
    import uuid

    return {
        "error_code": code,
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": -(2**31),
    }


def _coordinator_for(core: BrokerCore, key_type: int) -> tuple[ErrorCode, str | None]:
    if key_type == 1:
        if core.txn is None:
            return ErrorCode.coordinator_not_available, "transaction coordinator not running"
        return ErrorCode.none, None
    if key_type != 0:  # share groups (2) are not implemented
        return ErrorCode.invalid_request, f"unsupported coordinator key type {key_type}"
    if core.coordinator is None:
        return ErrorCode.coordinator_not_available, "group coordinator not running"
    return ErrorCode.none, None


def _coordinator_entry(
    core: BrokerCore, ctx: RequestContext, key_type: int, key: str
) -> dict[str, Any]:
    code, message = _coordinator_for(core, key_type)
    if key_type == 0 and not allowed(core, ctx, DESCRIBE, GROUP, key):
        code, message = ErrorCode.group_authorization_failed, None
    elif key_type == 1 and not allowed(core, ctx, DESCRIBE, TRANSACTIONAL_ID, key):
        code, message = ErrorCode.transactional_id_authorization_failed, None
    ok = code == ErrorCode.none
    host, port = core.endpoint(ctx) if ok else ("", -1)
    return {
        "key": key,
        "node_id": core.node_id if ok else -1,
        "host": host,
        "port": port,
        "error_code": code,
        "error_message": message,
    }


async def find_coordinator(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    key_type = int(getattr(req, "key_type", 0))
    if ctx.api_version >= 4:
        coords = [_coordinator_entry(core, ctx, key_type, key) for key in req.coordinator_keys]
        return respond(ctx, throttle_time=0, coordinators=coords)
    return respond(ctx, throttle_time=0, **_coordinator_entry(core, ctx, key_type, req.key))


async def describe_cluster(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    host, port = core.endpoint(ctx)
    return respond(
        ctx,
        throttle_time=0,
        error_code=0,
        error_message=None,
        endpoint_type=1,
        cluster_id=core.cluster_id,
        controller_id=core.node_id,
        brokers=[{"broker_id": core.node_id, "host": host, "port": port, "rack": None}],
        cluster_authorized_operations=_cluster_operations(core, ctx, req),
    )
