"""One consumer group: members, epochs, target assignment, who holds which partition.

Kafka's ``ConsumerGroup``. The group epoch bumps on any change of membership, subscriptions or
subscribed topics' metadata; the target assignment is computed at a group epoch (the
assignment epoch); each member reconciles towards it at its own member epoch.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from streamrt.broker.consumer_group.assignors import Assignment
from streamrt.broker.consumer_group.member import ConsumerMember
from streamrt.broker.consumer_group.regex import compile_regex
from streamrt.broker.modern_group.group import ModernGroupBase

__all__ = ("ConsumerGroup", "GroupState", "subscribed_topics")


class GroupState(enum.Enum):
    """Values as ConsumerGroupDescribe shows them (Kafka's ``ConsumerGroupState``)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


def subscribed_topics(member: ConsumerMember, topics: Mapping[str, int]) -> frozenset[str]:
    """The existing topics a member subscribes to, by name or by regex (a full match, as
    Kafka's RE2/J ``matches``; internal ``__`` topics never match a regex)."""
    names = {t for t in member.subscribed_topic_names if t in topics}
    if member.subscribed_topic_regex:
        pattern = compile_regex(member.subscribed_topic_regex)
        names.update(t for t in topics if not t.startswith("__") and pattern.fullmatch(t))
    return frozenset(names)


class ConsumerGroup(ModernGroupBase[ConsumerMember, Assignment]):
    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.assignor_name = ""
        #: the partition counts of the subscribed topics when the epoch last bumped
        self.subscription_metadata: dict[str, int] = {}
        self._owner_epochs: dict[tuple[str, int], int] = {}

    # -- derived ----------------------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if all(m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.STABLE
        return GroupState.RECONCILING

    def owner_epoch(self, topic: str, partition: int) -> int:
        """The epoch of the member holding the partition (assigned or being revoked), or -1."""
        return self._owner_epochs.get((topic, partition), -1)

    def subscription(self, topics: Mapping[str, int]) -> dict[str, int]:
        """Partition counts of every topic some member subscribes to."""
        names: set[str] = set()
        for member in self.members.values():
            names |= subscribed_topics(member, topics)
        return {t: topics[t] for t in sorted(names)}

    # -- updates ----------------------------------------------------------------------------

    def put(self, member: ConsumerMember) -> None:
        """Add or update a member, keeping the partition-owner table in step."""
        old = self._index(member)
        if old is not None:
            self._release(old)
        for topic, ps in member.held().items():  # a static member at -2 still holds them
            for p in ps:
                self._owner_epochs[(topic, p)] = member.member_epoch

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self._unindex(member_id)
        if member is not None:
            self._release(member)
        return member

    def _release(self, member: ConsumerMember) -> None:
        for topic, ps in member.held().items():
            for p in ps:
                self._owner_epochs.pop((topic, p), None)
