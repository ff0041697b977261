"""Group membership internals of aiokafka's consumer: member id, generation, a static
member's Heartbeat v3 reporting FENCED_INSTANCE_ID (82), a rejoin on demand (and none once the
member stopped), finding the coordinator early, and assigning-and-seeking with no await in
between (public API)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiokafka.errors as Errors
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.group import (
    HeartbeatRequest_v0,
    HeartbeatRequest_v1,
    HeartbeatResponse_v1,
)
from aiokafka.protocol.types import Int32, Schema, String

__all__ = (
    "FencedInstanceIdError",
    "assign_at",
    "check_static_membership",
    "find_coordinator",
    "generation",
    "group_coordinator",
    "in_generation",
    "install_static_heartbeat",
    "is_fenced",
    "member_id",
    "request_rejoin",
    "retire_static_member",
)

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


def group_coordinator(consumer: AIOKafkaConsumer | None) -> Any:
    """The consumer's group coordinator; None before ``start()`` or without a group."""
    return getattr(consumer, "_coordinator", None)


def member_id(consumer: AIOKafkaConsumer | None) -> str | None:
    """The member id the coordinator assigned to this consumer, once it has joined."""
    member = getattr(group_coordinator(consumer), "member_id", None)
    return str(member) if member else None


def generation(consumer: AIOKafkaConsumer | None) -> int | None:
    """The group generation this consumer last joined (-1 before the first join)."""
    value = getattr(group_coordinator(consumer), "generation", None)
    return None if value is None else int(value)


def request_rejoin(consumer: AIOKafkaConsumer) -> bool:
    """Make the consumer rejoin its group at its next poll (Kafka's ``enforceRebalance``).

    aiokafka has no public call for it; its coordinator's ``request_rejoin`` wakes the
    coordination task, which sends JoinGroup with fresh subscription metadata. A leader's
    rejoin always rebalances a stable group (KIP-345 coordinator), which is what a probing
    rebalance needs. Returns False if the consumer has no coordinator yet.
    """
    coordinator = group_coordinator(consumer)
    if coordinator is None:
        return False
    coordinator.request_rejoin()
    return True


async def find_coordinator(consumer: AIOKafkaConsumer) -> bool:
    """Look up and connect to the group coordinator now, before subscribing.

    aiokafka does it only once a subscription wakes its coordination task; a hand-off
    successor does it while the previous process still runs, so its JoinGroup goes out the
    moment it subscribes. Returns False if the consumer has no coordinator (no group).
    """
    coordinator = group_coordinator(consumer)
    if coordinator is None:
        return False
    await coordinator.ensure_coordinator_known()
    return True


def install_static_heartbeat(consumer: AIOKafkaConsumer) -> None:
    """Replace the started consumer's heartbeat with one that always carries the instance id.

    Only the request changes: a fenced answer raises :class:`FencedInstanceIdError`, every other
    answer goes through aiokafka's own handling. aiokafka's heartbeat has no instance id; sent
    again after a non-zero v3 answer (as this did before), it reached the coordinator after a
    hand-off successor had replaced this member, got UNKNOWN_MEMBER_ID instead of
    FENCED_INSTANCE_ID, and aiokafka then rejoined with an empty member id: that JoinGroup took
    the instance id back and fenced the successor.
    """
    coordinator = group_coordinator(consumer)
    if coordinator is None or coordinator._group_instance_id is None:
        return
    original = coordinator._do_heartbeat

    async def do_heartbeat() -> bool:
        request = _heartbeat_request(coordinator)
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
        return await _handle_answer(coordinator, original, resp)

    coordinator._do_heartbeat = do_heartbeat


async def _handle_answer(
    coordinator: Any, do_heartbeat: Callable[[], Awaitable[bool]], resp: Any
) -> bool:
    """aiokafka's heartbeat reaction to ``resp`` (rejoin, reset, coordinator dead, raise),
    without sending anything: its one ``_send_req`` call gets ``resp`` back at once. Nothing
    in between suspends, so no other request of this coordinator sees the stand-in."""
    send = coordinator._send_req

    async def answered(_request: Any) -> Any:
        return resp

    coordinator._send_req = answered
    try:
        return bool(await do_heartbeat())
    finally:
        coordinator._send_req = send


def retire_static_member(consumer: AIOKafkaConsumer | None) -> None:
    """This static member stopped for good (final commit made): it must never join again.

    A hand-off successor takes its ``group.instance.id`` meanwhile; any later JoinGroup from
    this consumer (a rebalance it heard of while closing, or a reset after a commit answered
    UNKNOWN_MEMBER_ID) would take the id back and fence the successor. The consumer keeps its
    member id and sends no LeaveGroup, so a plain restart still gets the partitions back.
    """
    coordinator = group_coordinator(consumer)
    if coordinator is None or coordinator._group_instance_id is None:
        return

    def never(_subscription: Any) -> bool:
        return False

    coordinator.need_rejoin = never


async def check_static_membership(consumer: AIOKafkaConsumer) -> None:
    """Ask the group coordinator whether this static member is still current; raises
    :class:`FencedInstanceIdError` if another process took its ``group.instance.id``.

    A thread whose transactional producer was fenced calls this before re-creating the
    producer: re-creating it would in turn fence the newer incarnation.
    """
    coordinator = group_coordinator(consumer)
    if coordinator is None or coordinator._group_instance_id is None:
        return
    request = _heartbeat_request(coordinator)
    try:
        resp = await coordinator._send_req(request)
    except Errors.KafkaError as err:
        logger.warning("membership check failed: %s", err)
        return
    if resp.error_code == FencedInstanceIdError.errno:
        raise FencedInstanceIdError(
            f"group.instance.id {coordinator._group_instance_id} is used by another member"
        )


def _heartbeat_request(coordinator: Any) -> StaticHeartbeatRequest:
    """Heartbeat v3 with this member's generation, member id and instance id."""
    return StaticHeartbeatRequest(
        coordinator.group_id,
        coordinator.generation,
        coordinator.member_id,
        coordinator._group_instance_id,
    )


async def in_generation(consumer: AIOKafkaConsumer) -> bool:
    """False if a Heartbeat now is answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: the group
    dropped this member (e.g. its process paused past the session timeout). True otherwise,
    unreachable coordinator included: the offset commit that follows will tell."""
    coordinator = group_coordinator(consumer)
    if coordinator is None:
        return True
    request = _heartbeat_request(coordinator)
    try:
        resp = await coordinator._send_req(request)
    except Errors.KafkaError as err:
        logger.info("membership not checked: %s", err)
        return True
    dropped = (Errors.UnknownMemberIdError.errno, Errors.IllegalGenerationError.errno)
    return resp.error_code not in dropped


async def assign_at(
    consumer: AIOKafkaConsumer, positions: Mapping[TopicPartition, int | None]
) -> None:
    """Assign exactly ``positions`` and seek each partition (``None``: the log start) with no
    await between the assignment and the seeks.

    aiokafka 0.14's fetcher resets a freshly assigned partition that has no position with the
    consumer's ``auto_offset_reset`` as soon as it gets control, and when an explicit
    ``seek_to_beginning`` arrives while that reset's ListOffsets is in flight, it applies the
    in-flight answer (it checks only that *a* reset is pending). Seeking partitions one by one
    with an ``await seek_to_beginning`` in between therefore let a later partition land at the
    changelog *end* (``latest`` is aiokafka's default): a restore then "completed" with nothing
    read and the store came up empty. Seen on a 3-broker Apache Kafka cluster, where the
    partitions' leaders differ and the two ListOffsets race. Public API only.
    """
    consumer.assign(list(positions))
    from_start = []
    for tp, position in positions.items():
        if position is None:
            from_start.append(tp)
        else:
            consumer.seek(tp, position)
    if from_start:
        await consumer.seek_to_beginning(*from_start)
