"""A consumer-protocol member and its reconciliation state (Kafka's ``ConsumerGroupMember``)."""

from __future__ import annotations

import base64
import dataclasses
import enum
import uuid
from collections.abc import Mapping

from streamrt.broker.consumer_group.assignors import Assignment
from streamrt.broker.modern_group.member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH

__all__ = (
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "ClassicMetadata",
    "ConsumerMember",
    "MemberState",
    "new_member_id",
    "same",
)


class MemberState(enum.Enum):
    """Where a member is on its way to the target assignment (Kafka's ``MemberState``)."""

    STABLE = "stable"
    #: it must first give up ``pending_revocation`` (its epoch stays until it does)
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    #: it is at the target epoch but waits for partitions other members still hold
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclasses.dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """What a member using the classic protocol (JoinGroup/SyncGroup/Heartbeat) in a consumer
    group adds (Kafka's ``ClassicMemberMetadata``): its session timeout and the protocols of
    its last JoinGroup, in its order of preference (name, subscription bytes)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.protocols)


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 300_000
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    #: what the member may consume now
    assigned: Assignment = dataclasses.field(default_factory=dict)
    #: what it still holds but must give up
    pending_revocation: Assignment = dataclasses.field(default_factory=dict)
    #: set for a member that uses the classic protocol (a migrating group), else None
    classic: ClassicMetadata | None = None
    #: (topic, partition) -> the member epoch at which it got that held partition (KIP-1251)
    assignment_epochs: Mapping[tuple[str, int], int] = dataclasses.field(default_factory=dict)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def assignment_epoch(self, topic: str, partition: int) -> int | None:
        """The epoch at which this member got a partition it holds (KIP-1251), None if it
        does not hold it. One with no recorded epoch (a member migrated from a classic group,
        a record written before KIP-1251) counts from the member's epoch, as Kafka's replay
        defaults it: older commits for it are refused, as before."""
        revoking = self.pending_revocation.get(topic, frozenset())
        if partition not in self.assigned.get(topic, frozenset()) | revoking:
            return None
        return self.assignment_epochs.get((topic, partition), max(self.member_epoch, 0))

    def held(self) -> Assignment:
        """Partitions this member counts as owner of: assigned and not yet revoked."""
        out = dict(self.assigned)
        for topic, ps in self.pending_revocation.items():
            out[topic] = out.get(topic, frozenset()) | ps
        return out


def same(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> bool:
    """Equal assignments, ignoring topics with no partitions."""
    return {t: p for t, p in a.items() if p} == {t: p for t, p in b.items() if p}


def new_member_id() -> str:
    """A member id the coordinator makes (Kafka's ``Uuid.randomUuid().toString()``)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
