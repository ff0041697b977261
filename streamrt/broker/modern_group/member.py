"""The member epochs, lookups and errors both broker-driven group protocols share (Kafka's
``ModernGroupMember`` and the ``throwIf*`` checks of ``GroupMetadataManager``).

Typed by small protocols so neither group package imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, ClassVar, Protocol, TypeVar

from streamrt.errors import ErrorCode, KafkaError

__all__ = (
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "MemberRequest",
    "ModernGroup",
    "ModernMember",
    "check_size",
    "fenced_instance",
    "leaving_member",
    "member_changes",
    "removed_member",
    "unknown_instance",
    "unknown_member",
    "unreleased_instance",
)

#: the member epoch a heartbeat sends to leave the group for good
LEAVE_EPOCH = -1
#: the member epoch a static member sends to leave for now (it keeps its place until expiry)
STATIC_LEAVE_EPOCH = -2


class ModernMember(Protocol):
    """What the shared logic reads of a member (frozen dataclasses in both packages, which
    the shared heartbeat steps copy with ``dataclasses.replace``)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def member_id(self) -> str: ...

    @property
    def member_epoch(self) -> int: ...

    @property
    def rebalance_timeout_ms(self) -> int: ...


M = TypeVar("M", bound=ModernMember)


class ModernGroup(Protocol[M]):
    """What the shared logic reads and changes of a group (Kafka's ``ModernGroup``)."""

    group_id: str
    group_epoch: int

    @property
    def target(self) -> MutableMapping[str, Any]:
        """Member id -> its target assignment (each protocol's own shape)."""

    @property
    def members(self) -> Mapping[str, M]: ...

    def static_member(self, instance_id: str) -> M | None: ...

    def put(self, member: M) -> None: ...

    def remove(self, member_id: str) -> M | None: ...


def unknown_member(member_id: str, group_id: str) -> KafkaError:
    return KafkaError(
        ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group_id}."
    )


def unknown_instance(instance_id: str) -> KafkaError:
    return KafkaError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")


def fenced_instance(member_id: str, instance_id: str, by: str) -> KafkaError:
    return KafkaError(
        ErrorCode.fenced_instance_id,
        f"Static member {member_id} with instance id {instance_id} was fenced by member {by}.",
    )


def unreleased_instance(member_id: str, instance_id: str) -> KafkaError:
    return KafkaError(
        ErrorCode.unreleased_instance_id,
        f"Static member {member_id} with instance id {instance_id} is not released yet.",
    )


def check_size(group: ModernGroup[M], max_size: int, kind: str) -> None:
    """Kafka's ``throwIf{Consumer,Streams}GroupIsFull`` (``group.<kind>.max.size``)."""
    if len(group.members) >= max_size:
        raise KafkaError(
            ErrorCode.group_max_size_reached,
            f"The {kind} group has reached its maximum capacity of {max_size} members.",
        )


def leaving_member(group: ModernGroup[M], member_id: str, instance_id: str | None) -> M:
    """The member a leave heartbeat names: by id, or by instance id for a static one (which
    must still be that instance's member)."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise unknown_member(member_id, group.group_id)
        return member
    static = group.static_member(instance_id)
    if static is None:
        raise unknown_instance(instance_id)
    if static.member_id != member_id:
        raise fenced_instance(member_id, instance_id, static.member_id)
    return static


def removed_member(group: ModernGroup[M], member_id: str, instance_id: str | None) -> M:
    """The member one identity of a LeaveGroup names (Kafka's
    ``classicGroupLeaveToConsumerGroup``): by member id, or by instance id for a static one;
    an admin removes by instance id alone (empty member id), so only a given member id is
    checked against the static member's (FENCED_INSTANCE_ID)."""
    if instance_id is None or member_id:
        return leaving_member(group, member_id, instance_id)
    static = group.static_member(instance_id)
    if static is None:
        raise unknown_instance(instance_id)
    return static


class MemberRequest(Protocol):
    """The heartbeat fields every member sends (both protocols' requests have them)."""

    @property
    def client_id(self) -> str: ...

    @property
    def client_host(self) -> str: ...

    @property
    def instance_id(self) -> str | None: ...

    @property
    def rack_id(self) -> str | None: ...

    @property
    def rebalance_timeout_ms(self) -> int: ...


def member_changes(req: MemberRequest) -> dict[str, object]:
    """The shared member fields this heartbeat sets (a null field, or -1 for the rebalance
    timeout, keeps the old value), for ``dataclasses.replace``."""
    changes: dict[str, object] = {"client_id": req.client_id, "client_host": req.client_host}
    if req.instance_id is not None:
        changes["instance_id"] = req.instance_id
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    return changes
