"""A static member rejoining with a new member id (KIP-345): the old id is fenced and the new
one takes its place, its assignment and, in a stable group, the generation, without a
rebalance; the group record is appended first and the swap reverted if that fails.
"""

from __future__ import annotations

import logging

from streamrt.broker.coordination.result import Result
from streamrt.broker.group.group import ClassicGroup, Member
from streamrt.broker.group.join_request import JoinRequest
from streamrt.broker.group.outbox import Outbox
from streamrt.broker.group.rebalance import RebalanceEngine
from streamrt.broker.group.state import GroupState
from streamrt.broker.group.timer import Timer, heartbeat_key
from streamrt.errors import ErrorCode
from streamrt.logs import fields
from streamrt.wire.group_responses import join_response

__all__ = ("StaticReplacement", "update_member")

logger = logging.getLogger("streamrt.broker.group.coordinator")


def update_member(out: Outbox, member: Member, join: JoinRequest) -> None:
    """Take the rejoin's protocols and timeouts; a previously parked JoinGroup of this member
    is superseded and never answered."""
    superseded = member.awaiting_join
    if superseded is not None and superseded.handle is not join.parked.handle:
        out.abandon(superseded.handle)
    member.protocols = join.protocols
    member.rebalance_timeout_ms = join.rebalance_timeout_ms
    member.session_timeout_ms = join.session_timeout_ms
    member.awaiting_join = join.parked


class StaticReplacement:
    """Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin`` and its revert."""

    def __init__(self, out: Outbox, engine: RebalanceEngine, timer: Timer) -> None:
        self.out = out
        self.engine = engine
        self.timer = timer

    def replace(self, group: ClassicGroup, join: JoinRequest, old_id: str, new_id: str) -> Result:
        """Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin`` (reference §1.5.1)."""
        instance_id = join.group_instance_id
        assert instance_id is not None
        leader_before = group.leader_id
        old = group.members[old_id]
        self.out.complete_join(old, ErrorCode.fenced_instance_id, old_id)
        self.out.complete_sync(old, ErrorCode.fenced_instance_id)
        self.timer.cancel(heartbeat_key(group.group_id, old_id))
        new = group.replace_static_member(instance_id, old_id, new_id)
        self.engine.reschedule_heartbeat(group, new)  # with the previous session timeout
        previous = (new.protocols, new.rebalance_timeout_ms, new.session_timeout_ms)
        update_member(self.out, new, join)
        logger.info(
            "static member replaced",
            extra=fields(group=group.group_id, instance=instance_id, old=old_id, new=new_id),
        )
        if group.is_in(GroupState.STABLE):
            if group.protocol_name != group.select_protocol():
                self.engine.maybe_prepare_rebalance_or_complete_join(group)
                return self.out.drain()
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            record = self.engine.group_record(group, assignment)

            def on_append(error: ErrorCode | None) -> Result:
                if error is not None:
                    return self._revert(group, join, new, previous, old_id, leader_before, error)
                is_leader = group.is_leader(new_id)
                skip = join.version >= 9
                self.out.complete_join(
                    new,
                    ErrorCode.none,
                    new_id,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=group.leader_id if skip else leader_before,
                    skip_assignment=skip and is_leader,
                    members=self.engine.member_list(group) if skip and is_leader else (),
                )
                return self.out.drain()

            return self.out.drain(records=(record,), on_append=on_append)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self.engine.prepare_rebalance(group)
        else:
            self.engine.maybe_complete_join_phase(group)
        return self.out.drain()

    def _revert(
        self,
        group: ClassicGroup,
        join: JoinRequest,
        new: Member,
        previous: tuple[tuple[tuple[str, bytes], ...], int, int],
        old_id: str,
        leader_before: str | None,
        error: ErrorCode,
    ) -> Result:
        new.protocols, new.rebalance_timeout_ms, new.session_timeout_ms = previous
        new.awaiting_join = None
        assert join.group_instance_id is not None
        self.timer.cancel(heartbeat_key(group.group_id, new.member_id))
        old = group.replace_static_member(join.group_instance_id, new.member_id, old_id)
        self.engine.reschedule_heartbeat(group, old)
        response = join_response(
            join.version,
            error,
            "",
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=leader_before,
        )
        self.out.complete(join.parked.handle, response)
        return self.out.drain()
