"""What the leader hands out: the assignor interface and KIP-429's cooperative rules.

An assignor sees every member's decoded subscription and the partition count of each topic
and returns a target assignment. Under the cooperative protocol the leader then holds back
every partition still owned by another member of the current generation (the owner revokes it
first; it is handed out in the second round), as Kafka's AbstractStickyAssignor and
ConsumerCoordinator do, and checks that no partition went to two members.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol

from streamrt.errors import StreamrtError
from streamrt.membership.protocol import ConsumerSubscription, TopicPartition, flatten

__all__ = (
    "AssignmentError",
    "Assignor",
    "MemberSubscription",
    "UserDataAssignor",
    "cooperative_adjust",
    "validate_assignment",
)


class AssignmentError(StreamrtError):
    """An assignment gives one partition to two members (or is otherwise unusable)."""


@dataclasses.dataclass(frozen=True, slots=True)
class MemberSubscription:
    """One member as the leader sees it in the JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    subscription: ConsumerSubscription


class Assignor(Protocol):
    """Kafka's ``ConsumerPartitionAssignor``, reduced to what the leader needs."""

    name: str  # the protocol name sent in JoinGroup (e.g. "range", "cooperative-sticky")

    def assign(
        self, members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]
    ) -> Mapping[str, set[TopicPartition]]:
        """member id → its partitions; every member id of ``members`` should be a key."""
        ...


class UserDataAssignor(Assignor, Protocol):
    """An assignor that also speaks through the protocol's user data (Kafka Streams' does):
    what each member adds to its subscription, what the leader adds to each assignment, and
    the user data this member received. :class:`~streamrt.membership.member.GroupMember`
    uses these methods when the assignor has them."""

    def subscription_user_data(self) -> bytes | None:
        """This member's subscription user data, asked at each JoinGroup."""
        ...

    def assignment_user_data(self, member_id: str) -> bytes | None:
        """As the leader, after :meth:`assign`: the user data for ``member_id``."""
        ...

    def on_assignment(self, user_data: bytes | None) -> None:
        """The user data of this member's new assignment, before the listener is told."""
        ...


def validate_assignment(assignment: Mapping[str, set[TopicPartition]]) -> None:
    """Raise :class:`AssignmentError` if a partition is assigned to two members."""
    seen: dict[TopicPartition, str] = {}
    for member, partitions in assignment.items():
        for tp in partitions:
            other = seen.setdefault(tp, member)
            if other != member:
                raise AssignmentError(
                    f"partition {tp[0]}-{tp[1]} is assigned to both {other!r} and {member!r}"
                )


def current_owners(subscriptions: Mapping[str, ConsumerSubscription]) -> dict[TopicPartition, str]:
    """Partition → the member that owns it in the newest generation any member reports.

    Claims from an older generation are ignored, as Kafka's sticky assignor does: such a
    member missed a rebalance and its partitions may already belong to someone else.
    """
    if not subscriptions:
        return {}
    newest = max(s.generation_id for s in subscriptions.values())
    owners: dict[TopicPartition, str] = {}
    for member, subscription in sorted(subscriptions.items()):
        if subscription.generation_id != newest:
            continue
        for tp in flatten(subscription.owned_partitions):
            owners.setdefault(tp, member)
    return owners


def cooperative_adjust(
    subscriptions: Mapping[str, ConsumerSubscription],
    target: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """The first round of a cooperative rebalance: ``target`` minus partitions still owned
    by a different member, who is told to give them up (they are absent from its own target).
    """
    validate_assignment(target)
    owners = current_owners(subscriptions)
    adjusted = {
        member: {tp for tp in partitions if owners.get(tp, member) == member}
        for member, partitions in target.items()
    }
    for member in subscriptions:
        adjusted.setdefault(member, set())
    return adjusted
