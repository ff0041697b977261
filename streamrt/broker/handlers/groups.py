"""Group APIs: handed to the group coordinator service, which answers (possibly after parking)."""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore
from streamrt.broker.security.group_access import guarded
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.context import RequestContext

__all__ = ("register",)


async def _to_coordinator(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if core.coordinator is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "group coordinator not running")
    return await guarded(core, ctx, req, core.coordinator.handle)  # ACLs (security/group_access)


def register(table: ApiTable, core: BrokerCore) -> None:
    """Advertise exactly the group APIs the running coordinator implements."""
    if core.coordinator is None:
        return
    for api_key, (lo, hi) in core.coordinator.supported_apis.items():
        table.register(api_key, lo, hi, _to_coordinator)
