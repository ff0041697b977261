"""A classic consumer group and its members: soft state plus the rules that only read it.

Mirrors Kafka's ``ClassicGroup`` / ``ClassicGroupMember``. Parked JoinGroup and SyncGroup
requests are :class:`Parked` handles owned by the network layer; the group only stores them.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence

from streamrt.broker.group.records import GroupMetadataValue
from streamrt.broker.group.state import CAN_REBALANCE_FROM, GroupState, check_transition
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("ClassicGroup", "Member", "Parked")

Protocols = tuple[tuple[str, bytes], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Parked:
    """A request held without an answer: the runtime's reply handle and the API version."""

    handle: object
    api_version: int


@dataclasses.dataclass(slots=True)
class Member:
    """A group member; ``protocols`` keeps the client's preference order."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: Parked | None = None
    awaiting_sync: Parked | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: Protocols) -> bool:
        """Same names, same order, same metadata bytes (Kafka's ``ClassicGroupMember.matches``)."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise KafkaError(ErrorCode.inconsistent_group_protocol, "member supports no candidate")


class ClassicGroup:
    """Soft state of one classic group (Kafka's ``ClassicGroup``).

    Responsibilities: membership (members, static map, pending ids, pending syncs), the leader,
    protocol support and selection, member validation, and asserted state transitions. Timers and
    replies are the coordinator's job.
    """

    def __init__(self, group_id: str, now_ms: int, state: GroupState = GroupState.EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = state
        self.current_state_timestamp: int | None = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.new_member_added = False

    # -- state ------------------------------------------------------------------------------

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.state, target)
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in CAN_REBALANCE_FROM

    # -- membership -------------------------------------------------------------------------

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id or client_id}-{uuid.uuid4()}"

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        """Drop a member or pending id; a removed leader hands over to any remaining member."""
        removed = self.members.pop(member_id, None)
        if removed is not None and removed.group_instance_id is not None:
            self.static_members.pop(removed.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return removed

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """Move a static member to a new id, keeping client id/host, timeouts and assignment.

        The caller answers the old id's parked JoinGroup/SyncGroup (FENCED_INSTANCE_ID) first.
        """
        old = self.members.pop(old_id)
        new = dataclasses.replace(old, member_id=new_id, awaiting_join=None, awaiting_sync=None)
        new.is_new = False
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return new

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None:
        """Kafka's ``validateMember``: the instance check comes before the member check."""
        if group_instance_id is not None:
            mapped = self.static_members.get(group_instance_id)
            if mapped is None:
                raise KafkaError(ErrorCode.unknown_member_id, "unknown group instance id")
            if mapped != member_id:
                raise KafkaError(ErrorCode.fenced_instance_id, "instance id maps to another member")
        if member_id not in self.members:
            raise KafkaError(ErrorCode.unknown_member_id, "unknown member id")

    # -- join phase -------------------------------------------------------------------------

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join() and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        """Largest rebalance timeout of the current members, rejoined or not."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a rejoined leader, else promote any rejoined member; False if nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols --------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, names: Sequence[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        if self.protocol_type != protocol_type:
            return False
        return any(self._supported_by_all(name) for name in names)

    def _supported_by_all(self, name: str) -> bool:
        return all(any(n == name for n, _ in m.protocols) for m in self.members.values())

    def candidate_protocols(self) -> set[str]:
        first = next(iter(self.members.values()))
        return {name for name, _ in first.protocols if self._supported_by_all(name)}

    def select_protocol(self) -> str:
        """Each member votes for its first candidate; most votes wins (ties: first seen)."""
        if not self.members:
            raise KafkaError(ErrorCode.unknown_server_error, "no protocol for an empty group")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        """Kafka's ``replay(GroupMetadataKey, GroupMetadataValue)``: Stable with members.

        Each member keeps only the selected protocol, as only that subscription is persisted;
        a rebalance timeout of -1 (or a v0 record) means the session timeout.
        """
        state = GroupState.STABLE if value.members else GroupState.EMPTY
        timestamp = value.current_state_timestamp
        group = cls(group_id, timestamp, state)
        if timestamp < 0:
            group.current_state_timestamp = None
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type
        group.protocol_name = value.protocol
        for m in value.members:
            rebalance = m.session_timeout if m.rebalance_timeout < 0 else m.rebalance_timeout
            group.add(
                Member(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=rebalance,
                    session_timeout_ms=m.session_timeout,
                    protocol_type=value.protocol_type,
                    protocols=((value.protocol or "", m.subscription),),
                    assignment=m.assignment,
                )
            )
        group.leader_id = value.leader
        return group
