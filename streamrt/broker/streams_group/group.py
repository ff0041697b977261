"""One streams group: topology, members, epochs, target tasks, who holds which task.

Kafka's ``StreamsGroup``. The group epoch bumps on a change of membership, of a member's
metadata (process, rack, tags, endpoint, topology epoch, ...), of the topology or of its
topics' partition counts; the target is computed at a group epoch (the assignment epoch);
each member reconciles towards it at its own member epoch.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping

from streamrt.broker.modern_group.group import ModernGroupBase
from streamrt.broker.streams_group.member import StreamsMember, Tasks
from streamrt.broker.streams_group.reconcile import Owners
from streamrt.broker.streams_group.topology import StreamsTopology

__all__ = ("GroupState", "Status", "StreamsGroup")

#: a heartbeat status: (code as StreamsGroupHeartbeatResponse's Status, detail)
Status = tuple[int, str]
_Task = tuple[str, int]


class GroupState(enum.Enum):
    """Values as StreamsGroupDescribe shows them (Kafka's ``StreamsGroupState``)."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


class StreamsGroup(ModernGroupBase[StreamsMember, Tasks]):
    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.topology: StreamsTopology | None = None
        self.endpoint_information_epoch = 0
        self.shutdown_requested_by: str | None = None
        #: the topology's epoch once its topics were found ready (-1: not yet)
        self.validated_topology_epoch = -1
        #: partition counts of the topology's topics when the epoch last bumped
        self.metadata: dict[str, int] = {}
        #: the topology status (missing or mispartitioned topics), from the last configure
        self.topology_status: tuple[Status, ...] = ()
        #: the number of tasks per subtopology of a ready topology (empty if not ready)
        self.tasks_per_subtopology: dict[str, int] = {}
        self.standby_replicas_used = 0
        self._active: dict[_Task, str] = {}
        self._standby: dict[_Task, Counter[str]] = {}
        self._warmup: dict[_Task, Counter[str]] = {}

    # -- derived ----------------------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.topology is None or not self.tasks_per_subtopology:
            return GroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if all(m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.STABLE
        return GroupState.RECONCILING

    def owners(self) -> Owners:
        return Owners(
            active=lambda s, p: self._active.get((s, p)),
            standby=lambda s, p: frozenset(self._standby.get((s, p), ())),
            warmup=lambda s, p: frozenset(self._warmup.get((s, p), ())),
        )

    def topic_names(self) -> frozenset[str]:
        """Every topic the topology reads or writes (source, repartition, changelog)."""
        names: set[str] = set()
        for sub in () if self.topology is None else self.topology.subtopologies:
            names.update(sub.source_topics, sub.repartition_sink_topics)
            names.update(t.name for t in sub.repartition_source_topics)
            names.update(t.name for t in sub.state_changelog_topics)
        return frozenset(names)

    def subscription(self, topics: Mapping[str, int]) -> dict[str, int]:
        """The existing topics the group reads while it has members (their offsets do not
        expire); an empty group reads none, so its offsets expire as a consumer group's."""
        if not self.members or self.topology is None:
            return {}
        names: set[str] = set()
        for sub in self.topology.subtopologies:
            names.update(sub.source_topics)
            names.update(t.name for t in sub.repartition_source_topics)
        return {t: topics[t] for t in sorted(names) if t in topics}

    def metadata_of(self, topics: Mapping[str, int]) -> dict[str, int]:
        return {t: topics[t] for t in sorted(self.topic_names()) if t in topics}

    def copy(self) -> StreamsGroup:
        """An independent copy, to undo a refused step: members, targets and the topology are
        frozen, so copying the maps (and the owner counters) suffices."""
        other = StreamsGroup.__new__(StreamsGroup)
        for name, value in vars(self).items():
            setattr(other, name, dict(value) if isinstance(value, dict) else value)
        vars(other).update(
            _standby={k: Counter(v) for k, v in self._standby.items()},
            _warmup={k: Counter(v) for k, v in self._warmup.items()},
        )
        return other

    # -- updates ----------------------------------------------------------------------------

    def put(self, member: StreamsMember) -> None:
        """Add or update a member, keeping the task-owner tables in step."""
        old = self._index(member)
        if old is not None:
            self._release(old)
        held = member.held()  # a static member at -2 still holds them
        for sub, ps in held.active.items():
            for p in ps:
                self._active[(sub, p)] = member.process_id
        for table, tasks in ((self._standby, held.standby), (self._warmup, held.warmup)):
            for sub, ps in tasks.items():
                for p in ps:
                    table.setdefault((sub, p), Counter())[member.process_id] += 1

    def remove(self, member_id: str) -> StreamsMember | None:
        member = self._unindex(member_id)
        if member is None:
            return None
        self._release(member)
        if self.shutdown_requested_by == member_id:
            self.shutdown_requested_by = None
        return member

    def _release(self, member: StreamsMember) -> None:
        held = member.held()
        for sub, ps in held.active.items():
            for p in ps:
                if self._active.get((sub, p)) == member.process_id:
                    del self._active[(sub, p)]
        for table, tasks in ((self._standby, held.standby), (self._warmup, held.warmup)):
            for sub, ps in tasks.items():
                for p in ps:
                    holders = table.get((sub, p))
                    if holders is None:
                        continue
                    holders[member.process_id] -= 1
                    if holders[member.process_id] <= 0:
                        del holders[member.process_id]
                    if not holders:
                        del table[(sub, p)]
