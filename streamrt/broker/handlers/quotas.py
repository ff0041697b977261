"""DescribeClientQuotas and AlterClientQuotas: Kafka's client quota entities, stored by the
broker (:mod:`streamrt.broker.quotas`); they are recorded and reported, not enforced."""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.quotas import ClientQuotaStore, Entity, QuotaFilter
from streamrt.broker.security import ALTER_CONFIGS, DESCRIBE_CONFIGS, allowed_cluster
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)


def register(table: ApiTable, core: BrokerCore) -> None:
    store = ClientQuotaStore(core.logs.data_dir / "meta" / "client-quotas.json")

    async def describe(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
        return describe_client_quotas(store, core, ctx, req)

    async def alter(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
        return alter_client_quotas(store, core, ctx, req)

    table.register(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, describe)
    table.register(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, alter)


def _entity_rows(entity: Entity) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in entity]


def describe_client_quotas(
    store: ClientQuotaStore, core: BrokerCore, ctx: RequestContext, req: Any
) -> Any:
    if not allowed_cluster(core, ctx, DESCRIBE_CONFIGS):
        raise KafkaError(ErrorCode.cluster_authorization_failed)
    quota_filter = QuotaFilter(
        [(c.entity_type, int(c.match_type), c.match) for c in req.components], bool(req.strict)
    )
    entries = [
        {
            "entity": _entity_rows(entity),
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
        }
        for entity, values in store.describe(quota_filter)
    ]
    return respond(ctx, throttle_time=0, error_code=0, error_message=None, entries=entries)


def alter_client_quotas(
    store: ClientQuotaStore, core: BrokerCore, ctx: RequestContext, req: Any
) -> Any:
    """Each entity is validated and answered on its own, as Kafka's controller does; a
    duplicate entity in one request is refused, the valid rest applied together."""
    authorized = allowed_cluster(core, ctx, ALTER_CONFIGS)
    results: list[dict[str, Any]] = []
    changes: list[tuple[Entity, list[tuple[str, float, bool]]]] = []
    seen: set[Entity] = set()
    for entry in req.entries:
        raw = [(e.entity_type, e.entity_name) for e in entry.entity]
        ops = [(op.key, float(op.value), bool(op.remove)) for op in entry.ops]
        code, message = ErrorCode.none, None
        try:
            if not authorized:
                raise KafkaError(ErrorCode.cluster_authorization_failed)
            entity = store.validate(raw, ops)
            if entity in seen:
                raise KafkaError(ErrorCode.invalid_request, f"Ignoring duplicate entity {raw}")
            seen.add(entity)
            changes.append((entity, ops))
        except KafkaError as exc:
            code, message = exc.code, str(exc)
        results.append(
            {
                "error_code": code,
                "error_message": message,
                "entity": [{"entity_type": t, "entity_name": n} for t, n in raw],
            }
        )
    if changes and not req.validate_only:
        store.alter(changes)
    return respond(ctx, throttle_time=0, entries=results)
