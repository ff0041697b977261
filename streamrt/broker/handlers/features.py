"""UpdateFeatures (KIP-584): this broker supports no finalized feature flags.

ApiVersions advertises no supported features, so every update names a feature this node does
not support and gets Kafka's answer for that, INVALID_UPDATE_VERSION (per feature up to v1,
as the top-level error from v2, where the response lost its per-feature results).
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import ALTER, allowed_cluster
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.UPDATE_FEATURES, 0, 2, update_features)


async def update_features(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if not allowed_cluster(core, ctx, ALTER):
        return respond(
            ctx,
            throttle_time=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message=None,
            results=[],
        )
    results = [
        {
            "feature": u.feature,
            "error_code": ErrorCode.invalid_update_version,
            "error_message": f"Invalid update version {u.max_version_level} for feature "
            f"{u.feature}. Local controller {core.node_id} does not support this feature.",
        }
        for u in req.feature_updates
    ]
    if ctx.api_version >= 2 and results:
        first = results[0]
        return respond(
            ctx,
            throttle_time=0,
            error_code=first["error_code"],
            error_message=first["error_message"],
        )
    return respond(ctx, throttle_time=0, error_code=0, error_message=None, results=results)
