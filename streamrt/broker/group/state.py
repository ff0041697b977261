"""Classic group states and the one table of allowed transitions (Kafka's ``ClassicGroupState``).

What each state answers:

* ``Empty``: no members (offsets may remain). A JoinGroup starts the initial rebalance; SyncGroup,
  Heartbeat and member OffsetCommits get UNKNOWN_MEMBER_ID; a generation -1 commit is accepted.
* ``PreparingRebalance``: JoinGroups are parked until everyone rejoined or the join timer fires.
  Heartbeat and SyncGroup get REBALANCE_IN_PROGRESS; commits of the current generation pass.
* ``CompletingRebalance``: waiting for the leader's SyncGroup; follower SyncGroups are parked,
  Heartbeat is fine, OffsetCommit gets REBALANCE_IN_PROGRESS.
* ``Stable``: SyncGroup returns the stored assignment; a leader JoinGroup always rebalances.
* ``Dead``: the group was deleted or unloaded; most requests get COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = ("VALID_PREVIOUS_STATES", "GroupState", "IllegalStateTransition")


class GroupState(enum.Enum):
    """Values are the names Kafka shows on the wire (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

#: States from which ``prepareRebalance`` may start (Kafka's ``canRebalance``).
CAN_REBALANCE_FROM: frozenset[GroupState] = VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]


class IllegalStateTransition(AssertionError):
    """A coordinator bug: a transition the table does not allow."""


def check_transition(current: GroupState, target: GroupState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(f"{current.value} -> {target.value} is not allowed")
