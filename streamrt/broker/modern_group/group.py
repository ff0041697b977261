"""What a consumer group and a streams group both hold (Kafka's ``ModernGroup``): the group
and assignment epochs, the members by id and static members by instance id, the target
assignment per member. Each protocol's group subclasses it and keeps its owner tables."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from streamrt.broker.modern_group.member import ModernMember

__all__ = ("ModernGroupBase",)

T = TypeVar("T")


class StaticMember(ModernMember, Protocol):
    """A member as the static-member index reads it."""

    @property
    def instance_id(self) -> str | None: ...


S = TypeVar("S", bound=StaticMember)


class ModernGroupBase(Generic[S, T]):
    """Members (``S``) and their targets (``T``); ``_index``/``_unindex`` keep the member and
    static-member maps in step, the subclass its own tables around them."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, S] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, T] = {}  # member id -> its target
        self.assignments_computed = 0  # target assignments computed (the /metrics rebalances)

    def static_member(self, instance_id: str) -> S | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def _index(self, member: S) -> S | None:
        """Put ``member`` in the maps; returns the one it replaces (to release its holdings)."""
        old = self.members.get(member.member_id)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        return old

    def _unindex(self, member_id: str) -> S | None:
        """Take a member out of the maps (its static id only if still its own) and its
        target; returns it, or None if unknown."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        instance_id = member.instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        self.target.pop(member_id, None)
        return member
