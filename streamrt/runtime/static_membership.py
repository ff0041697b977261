"""Make aiokafka 0.14 report FENCED_INSTANCE_ID (82) for a static member.

What aiokafka does by itself (read in ``aiokafka/consumer/group_coordinator.py``):

* it has no error class for code 82, so ``for_code(82)`` is ``UnknownError`` and the code is
  lost in the message;
* it sends Heartbeat v0/v1, which carry no ``group_instance_id``. When another process takes
  over our instance id, the coordinator can then only answer UNKNOWN_MEMBER_ID; aiokafka
  resets and rejoins with the same instance id, which replaces the other process, which does
  the same: the two take the id from each other for ever and nobody is told.
* it does skip LeaveGroup when ``group_instance_id`` is set (``_maybe_leave_group``), which
  is what static membership needs, so that part is left as it is.

This module registers :class:`FencedInstanceIdError` for code 82 and gives a consumer a
heartbeat that sends Heartbeat v3 with the ``group_instance_id`` (Kafka 2.3+), so the
coordinator answers 82 and the runtime can stop with a message naming the id.
"""

from __future__ import annotations

import logging
from typing import Any

import aiokafka.errors as Errors
from aiokafka import AIOKafkaConsumer
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.group import (
    HeartbeatRequest_v0,
    HeartbeatRequest_v1,
    HeartbeatResponse_v1,
)
from aiokafka.protocol.types import Int32, Schema, String

__all__ = ("FencedInstanceIdError", "install_static_heartbeat", "is_fenced")

logger = logging.getLogger(__name__)


class FencedInstanceIdError(Errors.BrokerResponseError):
    errno = 82
    message = "FENCED_INSTANCE_ID"
    description = "Another consumer with the same group.instance.id has joined the group."


Errors.kafka_errors.setdefault(82, FencedInstanceIdError)


def is_fenced(exc: BaseException) -> bool:
    """True for error 82 however aiokafka wrapped it (raised, or ``repr`` in a message)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, FencedInstanceIdError) or "FencedInstanceIdError" in str(seen):
            return True
        seen = seen.__cause__
    return False


class HeartbeatResponse_v3(Response):
    API_KEY = 12
    API_VERSION = 3
    SCHEMA = HeartbeatResponse_v1.SCHEMA


class HeartbeatRequest_v3(RequestStruct):
    API_KEY = 12
    API_VERSION = 3
    RESPONSE_TYPE = HeartbeatResponse_v3
    SCHEMA = Schema(
        ("group", String("utf-8")),
        ("generation_id", Int32),
        ("member_id", String("utf-8")),
        ("group_instance_id", String("utf-8")),
    )


class StaticHeartbeatRequest(
    Request[HeartbeatRequest_v0 | HeartbeatRequest_v1 | HeartbeatRequest_v3]
):
    """Heartbeat negotiated up to v3; v3 carries ``group_instance_id``."""

    API_KEY = 12

    def __init__(
        self, group: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> None:
        self._args = (group, generation_id, member_id)
        self._group_instance_id = group_instance_id

    def build(self, request_struct_class: type[Any]) -> Any:
        if request_struct_class.API_VERSION >= 3:
            return request_struct_class(*self._args, self._group_instance_id)
        return request_struct_class(*self._args)


def install_static_heartbeat(consumer: AIOKafkaConsumer) -> None:
    """Replace the started consumer's heartbeat with one that reports fencing.

    Only the request changes; every other answer is handed to aiokafka's own handling.
    """
    coordinator = consumer._coordinator
    if coordinator is None or coordinator._group_instance_id is None:
        return
    original = coordinator._do_heartbeat

    async def do_heartbeat() -> bool:
        request = StaticHeartbeatRequest(
            coordinator.group_id,
            coordinator.generation,
            coordinator.member_id,
            coordinator._group_instance_id,
        )
        try:
            resp = await coordinator._send_req(request)
        except Errors.KafkaError as err:
            logger.error("heartbeat request failed, will retry: %s", err)
            return False
        if resp.error_code == FencedInstanceIdError.errno:
            raise FencedInstanceIdError(
                f"group.instance.id {coordinator._group_instance_id} is used by another member"
            )
        if resp.error_code == 0:
            return True
        # Anything else: let aiokafka's heartbeat send again and handle the answer its way.
        return bool(await original())

    coordinator._do_heartbeat = do_heartbeat
