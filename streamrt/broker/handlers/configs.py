"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topic configs.

Broker configs are static (file and flags): they can be described, not altered.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.config import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigDef
from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import DESCRIBE_CONFIGS, allowed_cluster, require
from streamrt.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from streamrt.errors import ConfigError, ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

TOPIC, BROKER = 2, 4
# Kafka's ConfigSource values.
_TOPIC_CONFIG, _STATIC_BROKER_CONFIG, _DEFAULT_CONFIG = 1, 4, 5
# Kafka's DescribeConfigsResponse.ConfigType values.
_CONFIG_TYPES = {
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DESCRIBE_CONFIGS, 1, 4, describe_configs)
    table.register(ApiKey.ALTER_CONFIGS, 0, 2, alter_configs)
    table.register(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs)
    table.register(ApiKey.LIST_CONFIG_RESOURCES, 0, 0, list_client_metrics_resources)


async def list_client_metrics_resources(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """ListClientMetricsResources v0 (KIP-714): the client-metrics config resources. This
    broker serves no CLIENT_METRICS configs, so there are none to list."""
    if not allowed_cluster(core, ctx, DESCRIBE_CONFIGS):
        return respond(
            ctx,
            throttle_time=0,
            error_code=ErrorCode.cluster_authorization_failed,
            config_resources=[],
        )
    return respond(ctx, throttle_time=0, error_code=ErrorCode.none, config_resources=[])


def _entry(
    d: ConfigDef,
    name: str,
    value: str,
    source: int,
    read_only: bool,
    synonyms: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "value": None if d.sensitive else value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": d.sensitive,
        "synonyms": synonyms or [],
        "config_type": _CONFIG_TYPES[d.kind],
        "documentation": d.doc,
    }


def _broker_source(core: BrokerCore, key: str) -> int:
    return _DEFAULT_CONFIG if core.config.is_default(key) else _STATIC_BROKER_CONFIG


def _topic_entry(
    core: BrokerCore, name: str, overrides: dict[str, str], synonyms: bool
) -> dict[str, Any]:
    """A topic config with Kafka's source: the topic's override, else the broker's setting."""
    d = TOPIC_CONFIGS[name]
    chain: list[dict[str, Any]] = []
    if name in overrides:
        chain.append({"name": name, "value": overrides[name], "source": _TOPIC_CONFIG})
    broker_source = _broker_source(core, d.name)
    if broker_source == _STATIC_BROKER_CONFIG:
        chain.append({"name": d.name, "value": core.config.raw(d.name), "source": broker_source})
    chain.append({"name": d.name, "value": d.default, "source": _DEFAULT_CONFIG})
    value, source = str(chain[0]["value"]), int(chain[0]["source"])
    return _entry(d, name, value, source, False, chain if synonyms else None)


def _broker_entries(core: BrokerCore, keys: set[str] | None) -> list[dict[str, Any]]:
    values = dict(core.config.items())
    if not values.get("advertised.listeners"):
        # What this node tells clients (Kafka falls back to the listeners the same way).
        values["advertised.listeners"] = f"PLAINTEXT://{core.host}:{core.port}"
    return [
        _entry(BROKER_CONFIGS[name], name, value, _broker_source(core, name), True)
        for name, value in sorted(values.items())
        if keys is None or name in keys
    ]


def _describe_one(core: BrokerCore, req: Any, res: Any) -> list[dict[str, Any]]:
    keys = set(res.configuration_keys) if res.configuration_keys is not None else None
    if res.resource_type == TOPIC:
        info = core.logs.topics().get(res.resource_name)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, res.resource_name)
        synonyms = bool(getattr(req, "include_synonyms", False))
        return [
            _topic_entry(core, name, info.configs, synonyms)
            for name in sorted(TOPIC_CONFIGS)
            if keys is None or name in keys
        ]
    if res.resource_type == BROKER:
        if res.resource_name not in ("", str(core.node_id)):
            raise KafkaError(ErrorCode.invalid_request, f"unknown broker {res.resource_name!r}")
        return _broker_entries(core, keys)
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
            _require_on(core, ctx, res, AclOperation.DESCRIBE_CONFIGS)
            result["configs"] = _describe_one(core, req, res)
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


def _require_on(core: BrokerCore, ctx: RequestContext, res: Any, op: AclOperation) -> None:
    """DESCRIBE_CONFIGS/ALTER_CONFIGS on the topic, or on the cluster for broker configs."""
    if res.resource_type == TOPIC:
        require(core, ctx, op, ResourceType.TOPIC, res.resource_name)
    elif res.resource_type == BROKER:
        require(core, ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


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
            _require_on(core, ctx, res, AclOperation.ALTER_CONFIGS)
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
            _require_on(core, ctx, res, AclOperation.ALTER_CONFIGS)
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
                    if TOPIC_CONFIGS[c.name].kind != "LIST":
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
