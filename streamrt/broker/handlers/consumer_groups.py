"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848), answered as a Kafka 4.0 broker
whose ``group.coordinator.rebalance.protocols`` leaves out ``consumer`` answers them.

Kafka advertises both APIs in that configuration and answers each request with
UNSUPPORTED_VERSION (``KafkaApis.isConsumerGroupProtocolEnabled``); clients then stay on (or
fall back to) the classic protocol, which this broker's group coordinator serves.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

_DISABLED = "The consumer group rebalance protocol (KIP-848) is not enabled on this broker"


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, consumer_group_heartbeat)
    table.register(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, consumer_group_describe)


async def consumer_group_heartbeat(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    return respond(
        ctx,
        throttle_time=0,
        error_code=ErrorCode.unsupported_version,
        error_message=_DISABLED,
        member_id=None,
        member_epoch=-1,
        heartbeat_interval=0,
        assignment=None,
    )


async def consumer_group_describe(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    groups = [
        {
            "error_code": ErrorCode.unsupported_version,
            "error_message": _DISABLED,
            "group_id": group_id,
            "group_state": "",
            "group_epoch": -1,
            "assignment_epoch": -1,
            "assignor_name": "",
            "members": [],
            "authorized_operations": -(2**31),
        }
        for group_id in req.group_ids
    ]
    return respond(ctx, throttle_time=0, groups=groups)
