"""CreateTopics, DeleteTopics and CreatePartitions: topic lifecycle on the LogManager."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import Any

from streamrt.broker.config import TOPIC_CONFIGS
from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.handlers import topic_limits
from streamrt.broker.handlers.replicas import check_assignment
from streamrt.broker.security import ALTER, CREATE, DELETE, TOPIC, require
from streamrt.errors import ConfigError, ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

logger = logging.getLogger(__name__)

_NO_ID = uuid.UUID(int=0)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.CREATE_TOPICS, 2, 7, create_topics)
    table.register(ApiKey.DELETE_TOPICS, 1, 6, delete_topics)
    table.register(ApiKey.CREATE_PARTITIONS, 0, 3, create_partitions)


def _source(core: BrokerCore, name: str, overrides: dict[str, str]) -> int:
    """Kafka's ConfigSource: DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG or DEFAULT_CONFIG."""
    if name in overrides:
        return 1
    return 5 if core.config.is_default(TOPIC_CONFIGS[name].name) else 4


def _check_assignments(core: BrokerCore, assignments: list[list[int]]) -> None:
    for replicas in assignments:
        code, message = check_assignment(core, replicas)
        if code != ErrorCode.none:
            raise KafkaError(code, message or "")


def _error_of(exc: Exception) -> tuple[ErrorCode, str]:
    if isinstance(exc, KafkaError):
        return exc.code, str(exc)
    if isinstance(exc, ConfigError):
        return ErrorCode.invalid_config, str(exc)
    raise exc


async def create_topics(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """Kafka's per-request bounds first (over them, every topic gets the error), then each
    topic on its own."""
    try:
        topic_limits.check_create_topics(
            req, int(core.config["num.partitions"]), core.logs.topics().keys()
        )
    except KafkaError as exc:
        return respond(ctx, throttle_time=0, topics=[_refused(t.name, exc) for t in req.topics])
    return respond(ctx, throttle_time=0, topics=_create_each(core, ctx, req))


def _create_each(core: BrokerCore, ctx: RequestContext, req: Any) -> list[dict[str, Any]]:
    results = []
    seen: set[str] = set()
    for t in req.topics:
        result: dict[str, Any] = {
            "name": t.name,
            "topic_id": _NO_ID,
            "error_code": 0,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        }
        try:
            if t.name in seen:
                raise KafkaError(ErrorCode.invalid_request, f"topic {t.name!r} listed twice")
            seen.add(t.name)
            require(core, ctx, CREATE, TOPIC, t.name, or_cluster=True)
            if t.assignments:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise KafkaError(
                        ErrorCode.invalid_request,
                        "both numPartitions or replicationFactor and replicasAssignments were set",
                    )
                if sorted(a.partition_index for a in t.assignments) != list(
                    range(len(t.assignments))
                ):
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment,
                        "partitions should be a consecutive 0-based integer sequence",
                    )
                _check_assignments(core, [list(a.broker_ids) for a in t.assignments])
                t = dataclasses.replace(t, num_partitions=len(t.assignments), replication_factor=1)
            if t.replication_factor not in (-1, 1):
                raise KafkaError(
                    ErrorCode.invalid_replication_factor,
                    f"replication factor {t.replication_factor} > 1 on a single-node broker",
                )
            n = int(core.config["num.partitions"]) if t.num_partitions == -1 else t.num_partitions
            configs = {c.name: c.value for c in t.configs}
            info = core.logs.create_topic(t.name, n, configs, validate_only=bool(req.validate_only))
            result.update(topic_id=info.topic_id, num_partitions=n, replication_factor=1)
            effective = core.logs.effective_config(t.name) if not req.validate_only else {}
            result["configs"] = [
                {
                    "name": k,
                    "value": str(v),
                    "read_only": False,
                    "config_source": _source(core, k, configs),
                    "is_sensitive": False,
                }
                for k, v in sorted(effective.items())
            ]
            if not req.validate_only:
                logger.info("created topic %s with %d partitions", t.name, n)
        except (KafkaError, ConfigError) as exc:
            code, msg = _error_of(exc)
            result.update(error_code=code, error_message=msg)
        results.append(result)
    return results


def _refused(name: str, exc: KafkaError) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": _NO_ID,
        "error_code": exc.code,
        "error_message": str(exc),
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


async def delete_topics(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    by_id = {info.topic_id: name for name, info in core.logs.topics().items()}
    responses = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            name = by_id.get(topic_id)
        entry: dict[str, Any] = {
            "name": name,
            "topic_id": topic_id or _NO_ID,
            "error_code": 0,
            "error_message": None,
        }
        try:
            if name is None:
                raise KafkaError(ErrorCode.unknown_topic_id, f"unknown topic id {topic_id}")
            require(core, ctx, DELETE, TOPIC, name)
            info = core.logs.topics().get(name)
            if info is not None and info.internal:
                raise KafkaError(ErrorCode.topic_authorization_failed, "internal topic")
            core.logs.delete_topic(name)
            logger.info("deleted topic %s", name)
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=str(exc))
        responses.append(entry)
    return respond(ctx, throttle_time=0, responses=responses)


async def create_partitions(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    current = {name: info.num_partitions for name, info in core.logs.topics().items()}
    try:
        topic_limits.check_create_partitions(req, current)
    except KafkaError as exc:  # the whole request, as Kafka's controller
        refused = [
            {"name": t.name, "error_code": exc.code, "error_message": str(exc)} for t in req.topics
        ]
        return respond(ctx, throttle_time=0, results=refused)
    results = []
    for t in req.topics:
        entry: dict[str, Any] = {"name": t.name, "error_code": 0, "error_message": None}
        try:
            require(core, ctx, ALTER, TOPIC, t.name)
            if t.assignments is not None:
                info = core.logs.topics().get(t.name)
                added = t.count - info.num_partitions if info is not None else 0
                if info is not None and len(t.assignments) != added:
                    raise KafkaError(
                        ErrorCode.invalid_replica_assignment,
                        f"Increasing the number of partitions by {added} but "
                        f"{len(t.assignments)} assignments provided.",
                    )
                _check_assignments(core, [list(a.broker_ids) for a in t.assignments])
            core.logs.create_partitions(t.name, t.count, validate_only=bool(req.validate_only))
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=str(exc))
        results.append(entry)
    return respond(ctx, throttle_time=0, results=results)
