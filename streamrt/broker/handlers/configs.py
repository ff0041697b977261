"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topic configs.

Broker configs are static (file and flags): they can be described, not altered.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.config import BROKER_CONFIGS, TOPIC_CONFIGS
from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.errors import ConfigError, ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

TOPIC, BROKER = 2, 4
# Kafka's ConfigSource values.
_TOPIC_CONFIG, _STATIC_BROKER_CONFIG, _DEFAULT_CONFIG = 1, 4, 5
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DESCRIBE_CONFIGS, 1, 4, describe_configs)
    table.register(ApiKey.ALTER_CONFIGS, 0, 2, alter_configs)
    table.register(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs)


def _entry(name: str, value: str, source: int, read_only: bool, doc: str) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": 0,
        "documentation": doc,
    }


def _describe_one(core: BrokerCore, res: Any) -> list[dict[str, Any]]:
    keys = set(res.configuration_keys) if res.configuration_keys is not None else None
    if res.resource_type == TOPIC:
        info = core.logs.topics().get(res.resource_name)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, res.resource_name)
        defaults = core.config.topic_defaults()
        out = []
        for name in sorted(TOPIC_CONFIGS):
            if keys is not None and name not in keys:
                continue
            if name in info.configs:
                out.append(_entry(name, info.configs[name], _TOPIC_CONFIG, False, ""))
            else:
                out.append(_entry(name, defaults[name], _DEFAULT_CONFIG, False, ""))
        return out
    if res.resource_type == BROKER:
        if res.resource_name not in ("", str(core.node_id)):
            raise KafkaError(ErrorCode.invalid_request, f"unknown broker {res.resource_name!r}")
        return [
            _entry(name, value, _STATIC_BROKER_CONFIG, True, BROKER_CONFIGS[name].doc)
            for name, value in sorted(core.config.items())
            if keys is None or name in keys
        ]
    raise KafkaError(ErrorCode.invalid_request, f"unsupported resource type {res.resource_type}")


async def describe_configs(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    results = []
    for res in req.resources:
        result: dict[str, Any] = {
            "error_code": 0,
            "error_message": None,
            "resource_type": res.resource_type,
            "resource_name": res.resource_name,
            "configs": [],
        }
        try:
            result["configs"] = _describe_one(core, res)
        except KafkaError as exc:
            result.update(error_code=exc.code, error_message=str(exc))
        results.append(result)
    return respond(ctx, throttle_time=0, results=results)


def _alter_result(res: Any, exc: Exception | None) -> dict[str, Any]:
    if exc is None:
        code, msg = ErrorCode.none, None
    elif isinstance(exc, KafkaError):
        code, msg = exc.code, str(exc)
    else:
        code, msg = ErrorCode.invalid_config, str(exc)
    return {
        "error_code": code,
        "error_message": msg,
        "resource_type": res.resource_type,
        "resource_name": res.resource_name,
    }


def _check_topic_resource(res: Any) -> None:
    if res.resource_type == BROKER:
        raise KafkaError(
            ErrorCode.invalid_request, "broker configs are static: set them in the config file"
        )
    if res.resource_type != TOPIC:
        raise KafkaError(
            ErrorCode.invalid_request, f"unsupported resource type {res.resource_type}"
        )


async def alter_configs(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    responses = []
    for res in req.resources:
        try:
            _check_topic_resource(res)
            new = {c.name: c.value for c in res.configs}
            core.logs.alter_topic_config(
                res.resource_name, new, replace_all=True, validate_only=bool(req.validate_only)
            )
            responses.append(_alter_result(res, None))
        except (KafkaError, ConfigError) as exc:
            responses.append(_alter_result(res, exc))
    return respond(ctx, throttle_time=0, responses=responses)


def _list_op(current: str, value: str, op: int) -> str:
    items = [p for p in current.split(",") if p]
    changes = [p.strip() for p in value.split(",") if p.strip()]
    if op == _APPEND:
        items += [c for c in changes if c not in items]
    else:
        items = [p for p in items if p not in changes]
    return ",".join(items)


async def incremental_alter_configs(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    responses = []
    for res in req.resources:
        try:
            _check_topic_resource(res)
            info = core.logs.topics().get(res.resource_name)
            if info is None:
                raise KafkaError(ErrorCode.unknown_topic_or_partition, res.resource_name)
            defaults = core.config.topic_defaults()
            set_: dict[str, str] = {}
            delete: list[str] = []
            for c in res.configs:
                if c.name not in TOPIC_CONFIGS:
                    raise ConfigError(f"unknown topic config {c.name!r}")
                if c.config_operation == _SET:
                    set_[c.name] = c.value or ""
                elif c.config_operation == _DELETE:
                    delete.append(c.name)
                elif c.config_operation in (_APPEND, _SUBTRACT):
                    if c.name != "cleanup.policy":
                        raise ConfigError(f"{c.name!r} is not a list config")
                    current = info.configs.get(c.name, defaults[c.name])
                    set_[c.name] = _list_op(current, c.value or "", c.config_operation)
                else:
                    raise KafkaError(
                        ErrorCode.invalid_request, f"unknown config operation {c.config_operation}"
                    )
            core.logs.alter_topic_config(
                res.resource_name, set_, delete, validate_only=bool(req.validate_only)
            )
            responses.append(_alter_result(res, None))
        except (KafkaError, ConfigError) as exc:
            responses.append(_alter_result(res, exc))
    return respond(ctx, throttle_time=0, responses=responses)
