"""The classic group coordinator as a pure state machine (Kafka's ``GroupMetadataManager``).

Handlers take a :class:`RequestContext`, a kio request entity and, for JoinGroup and SyncGroup,
an opaque reply handle; each returns a :class:`Result`. No I/O and no wall clock: time comes
from the injected ``Clock`` and timeouts from the injected ``Timer``, whose ops return Results
too. The runtime (``service.py``) appends the records before delivering any reply.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from streamrt.broker.coordination.result import Result
from streamrt.broker.group import admin, txn_offsets
from streamrt.broker.group.group import ClassicGroup, Member, Parked
from streamrt.broker.group.join_request import JoinRequest
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.outbox import Outbox
from streamrt.broker.group.pending import PendingTxnOffsets
from streamrt.broker.group.rebalance import GroupConfig, RebalanceEngine
from streamrt.broker.group.records import (
    CoordinatorRecord,
)
from streamrt.broker.group.replay import replay_record
from streamrt.broker.group.state import GroupState
from streamrt.broker.group.static_members import StaticReplacement, update_member
from streamrt.broker.group.timer import Timer, heartbeat_key
from streamrt.clock import Clock
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import (
    heartbeat_response,
    join_response,
    leave_response,
    sync_response,
)

__all__ = ("GroupConfig", "GroupCoordinator")

logger = logging.getLogger(__name__)
_R = TypeVar("_R")


class GroupCoordinator:
    """Classic groups with static membership (KIP-345), plus their committed offsets.

    Responsibilities: the request handlers, ``replay`` of ``__consumer_offsets`` records,
    ``on_loaded`` and ``unload``. The join/sync machinery lives in :class:`RebalanceEngine`,
    offsets in :class:`OffsetMetadataManager`, admin APIs in :mod:`admin`.
    """

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        timer: Timer,
        partition_exists: Callable[[str, int], bool] = lambda topic, partition: True,
    ) -> None:
        self.config = config
        self.clock = clock
        self.timer = timer
        self.partition_exists = partition_exists
        self.groups: dict[str, ClassicGroup] = {}
        self.pending_txn_offsets = PendingTxnOffsets()
        self.out = Outbox()
        self.engine = RebalanceEngine(self.groups, config, clock, timer, self.out)
        self.static = StaticReplacement(self.out, self.engine, timer)
        self.offsets = OffsetMetadataManager(
            self.groups,
            config,
            clock,
            touch_member=self.engine.reschedule_heartbeat,
            partition_exists=partition_exists,
            pending=self.pending_txn_offsets,
        )

    # -- steps ------------------------------------------------------------------------------

    def step(self, op: Callable[[], _R]) -> _R:
        """Run one step (a request handler, a timer op, an append callback).

        If it raises, whatever it had collected (records, answers to parked requests) is
        discarded, so nothing of a failed step goes out with the next one.
        """
        try:
            return op()
        except BaseException:
            self.out.discard()
            raise

    # -- JoinGroup --------------------------------------------------------------------------

    def join_group(self, ctx: RequestContext, request: Any, handle: object) -> Result:
        join = JoinRequest.parse(ctx, request, handle)
        if not join.group_id:
            return self.out.drain(join.error(ErrorCode.invalid_group_id))
        cfg = self.config
        if not cfg.min_session_timeout_ms <= join.session_timeout_ms <= cfg.max_session_timeout_ms:
            return self.out.drain(join.error(ErrorCode.invalid_session_timeout))
        group = self.groups.get(join.group_id)
        is_new_group = group is None
        if group is None:
            if join.member_id:
                return self.out.drain(join.error(ErrorCode.unknown_member_id))
            group = ClassicGroup(join.group_id, self.clock.now_ms())
            self.groups[join.group_id] = group
        if not self._accept_joining_member(group, join.member_id):
            group.remove(join.member_id)
            self.timer.cancel(heartbeat_key(group.group_id, join.member_id))
            result = self.out.drain(join.error(ErrorCode.group_max_size_reached, ""))
        elif not join.member_id:
            result = self._join_new_member(group, join)
        else:
            result = self._join_existing_member(group, join)
        if is_new_group and not result.records:
            record = self.engine.group_record(group, {})
            result = dataclasses.replace(result, records=(record,), replay=False)
        return result

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        """Kafka's ``acceptJoiningMember`` (group.max.size)."""
        member = group.members.get(member_id)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            awaiting = member is not None and member.awaiting_join is not None
            return awaiting or group.num_awaiting_join() < self.config.max_size
        if group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return member is not None or len(group.members) < self.config.max_size
        return True

    def _join_new_member(self, group: ClassicGroup, join: JoinRequest) -> Result:
        if group.is_in(GroupState.DEAD):
            return self.out.drain(join.error(ErrorCode.coordinator_not_available, ""))
        if not group.supports_protocols(join.protocol_type, [n for n, _ in join.protocols]):
            return self.out.drain(join.error(ErrorCode.inconsistent_group_protocol, ""))
        new_id = group.generate_member_id(join.client_id, join.group_instance_id)
        if join.group_instance_id is not None:
            old_id = group.static_members.get(join.group_instance_id)
            if old_id is not None:
                return self.static.replace(group, join, old_id, new_id)
            return self._add_member(group, join, new_id)
        if join.version >= 4:
            group.pending_members.add(new_id)
            self.engine.schedule_pending_member(group, new_id, join.session_timeout_ms)
            return self.out.drain(join.error(ErrorCode.member_id_required, new_id))
        return self._add_member(group, join, new_id)

    def _join_existing_member(self, group: ClassicGroup, join: JoinRequest) -> Result:
        member_id = join.member_id
        if group.is_in(GroupState.DEAD):
            return self.out.drain(join.error(ErrorCode.coordinator_not_available))
        if not group.supports_protocols(join.protocol_type, [n for n, _ in join.protocols]):
            return self.out.drain(join.error(ErrorCode.inconsistent_group_protocol))
        if group.is_pending(member_id):
            if join.group_instance_id is not None:
                return self.out.drain(join.error(ErrorCode.unknown_server_error))
            return self._add_member(group, join, member_id)
        try:
            group.validate_member(member_id, join.group_instance_id)
        except KafkaError as exc:
            return self.out.drain(join.error(exc.code))
        member = group.members[member_id]
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return self._update_member_then_rebalance(group, member, join)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            if not member.matches(join.protocols):
                return self._update_member_then_rebalance(group, member, join)
            is_leader = group.is_leader(member_id)
            return self.out.drain(
                self._current_generation(group, join, member_id, with_members=is_leader)
            )
        if group.is_in(GroupState.STABLE):
            if group.is_leader(member_id) or not member.matches(join.protocols):
                return self._update_member_then_rebalance(group, member, join)
            return self.out.drain(self._current_generation(group, join, member_id))
        return self.out.drain(join.error(ErrorCode.unknown_member_id))

    def _current_generation(
        self, group: ClassicGroup, join: JoinRequest, member_id: str, *, with_members: bool = False
    ) -> Any:
        return join_response(
            join.version,
            ErrorCode.none,
            member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id,
            members=self.engine.member_list(group) if with_members else (),
        )

    def _update_member_then_rebalance(
        self, group: ClassicGroup, member: Member, join: JoinRequest
    ) -> Result:
        update_member(self.out, member, join)
        self.engine.maybe_prepare_rebalance_or_complete_join(group)
        return self.out.drain()

    def _add_member(self, group: ClassicGroup, join: JoinRequest, member_id: str) -> Result:
        member = Member(
            member_id=member_id,
            group_instance_id=join.group_instance_id,
            client_id=join.client_id,
            client_host=join.client_host,
            rebalance_timeout_ms=join.rebalance_timeout_ms,
            session_timeout_ms=join.session_timeout_ms,
            protocol_type=join.protocol_type,
            protocols=join.protocols,
            awaiting_join=join.parked,
            is_new=True,
        )
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True
        group.add(member)
        self.engine.reschedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self.engine.maybe_prepare_rebalance_or_complete_join(group)
        return self.out.drain()

    # -- SyncGroup --------------------------------------------------------------------------

    def sync_group(self, ctx: RequestContext, request: Any, handle: object) -> Result:
        v = ctx.api_version
        protocol_type = getattr(request, "protocol_type", None)
        protocol_name = getattr(request, "protocol_name", None)
        if v >= 5 and (protocol_type is None or protocol_name is None):
            return self.out.drain(sync_response(v, ErrorCode.inconsistent_group_protocol))
        if not request.group_id:
            return self.out.drain(sync_response(v, ErrorCode.invalid_group_id))
        group = self.groups.get(request.group_id)
        if group is None:
            return self.out.drain(sync_response(v, ErrorCode.unknown_member_id))
        member_id = request.member_id
        error = self._validate_sync(group, request, protocol_type, protocol_name)
        if error is not None:
            return self.out.drain(sync_response(v, error))
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return self.out.drain(sync_response(v, ErrorCode.rebalance_in_progress))
        member = group.members[member_id]
        if group.is_in(GroupState.STABLE):
            self.engine.remove_pending_sync_member(group, member_id)
            return self.out.drain(
                sync_response(
                    v,
                    ErrorCode.none,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                )
            )
        member.awaiting_sync = Parked(handle, v)
        self.engine.remove_pending_sync_member(group, member_id)
        if not group.is_leader(member_id):
            return self.out.drain()
        given = {a.member_id: a.assignment for a in request.assignments}
        assignment = {mid: given.get(mid, b"") for mid in group.members}
        generation = request.generation_id
        record = self.engine.group_record(group, assignment)

        def on_append(error: ErrorCode | None) -> Result:
            current = self.groups.get(group.group_id) is group
            if (
                current
                and group.is_in(GroupState.COMPLETING_REBALANCE)
                and generation == group.generation_id
            ):
                if error is not None:
                    self.engine.reset_and_propagate_assignment_with_error(group, error)
                    self.engine.maybe_prepare_rebalance_or_complete_join(group)
                else:
                    self.engine.set_and_propagate_assignment(group, assignment)
                    group.transition_to(GroupState.STABLE, self.clock.now_ms())
            return self.out.drain()

        return self.out.drain(records=(record,), on_append=on_append)

    @staticmethod
    def _validate_sync(
        group: ClassicGroup, request: Any, protocol_type: str | None, protocol_name: str | None
    ) -> ErrorCode | None:
        if group.is_in(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        try:
            group.validate_member(request.member_id, getattr(request, "group_instance_id", None))
        except KafkaError as exc:
            return exc.code
        if request.generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        for given, current in (
            (protocol_type, group.protocol_type),
            (protocol_name, group.protocol_name),
        ):
            if given is not None and current is not None and given != current:
                return ErrorCode.inconsistent_group_protocol
        return None

    # -- Heartbeat --------------------------------------------------------------------------

    def heartbeat(self, ctx: RequestContext, request: Any) -> Result:
        v = ctx.api_version
        if not request.group_id:
            return self.out.drain(heartbeat_response(v, ErrorCode.invalid_group_id))
        group = self.groups.get(request.group_id)
        if group is None:
            return self.out.drain(heartbeat_response(v, ErrorCode.unknown_member_id))
        if group.is_in(GroupState.DEAD):
            return self.out.drain(heartbeat_response(v, ErrorCode.coordinator_not_available))
        try:
            group.validate_member(request.member_id, getattr(request, "group_instance_id", None))
        except KafkaError as exc:
            return self.out.drain(heartbeat_response(v, exc.code))
        if request.generation_id != group.generation_id:
            return self.out.drain(heartbeat_response(v, ErrorCode.illegal_generation))
        if group.is_in(GroupState.EMPTY):
            return self.out.drain(heartbeat_response(v, ErrorCode.unknown_member_id))
        self.engine.reschedule_heartbeat(group, group.members[request.member_id])
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return self.out.drain(heartbeat_response(v, ErrorCode.rebalance_in_progress))
        return self.out.drain(heartbeat_response(v, ErrorCode.none))

    # -- LeaveGroup -------------------------------------------------------------------------

    def leave_group(self, ctx: RequestContext, request: Any) -> Result:
        v = ctx.api_version
        if v >= 3:
            identities = [(m.member_id, m.group_instance_id) for m in request.members]
        else:
            identities = [(request.member_id, None)]
        if not request.group_id:
            return self.out.drain(leave_response(v, ErrorCode.invalid_group_id))
        group = self.groups.get(request.group_id)
        if group is None:
            unknown = [(mid, iid, ErrorCode.unknown_member_id) for mid, iid in identities]
            return self.out.drain(leave_response(v, ErrorCode.none, unknown))
        if group.is_in(GroupState.DEAD):
            return self.out.drain(leave_response(v, ErrorCode.coordinator_not_available))
        results = [(mid, iid, self._leave_one(group, mid, iid)) for mid, iid in identities]
        if any(code is ErrorCode.none for _, _, code in results):
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self.engine.maybe_prepare_rebalance_or_complete_join(group)
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                self.engine.maybe_complete_join_phase(group)
        return self.out.drain(leave_response(v, ErrorCode.none, results))

    def _leave_one(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
        if not member_id:
            mapped = group.static_members.get(instance_id) if instance_id is not None else None
            if mapped is None:
                return ErrorCode.unknown_member_id
            self.engine.remove_current_member(group, mapped)
            return ErrorCode.none
        if group.is_pending(member_id):
            group.remove(member_id)
            self.timer.cancel(heartbeat_key(group.group_id, member_id))
            return ErrorCode.none
        try:
            group.validate_member(member_id, instance_id)
        except KafkaError as exc:
            return exc.code
        self.engine.remove_current_member(group, member_id)
        return ErrorCode.none

    # -- offsets and admin APIs ---------------------------------------------------------------

    def offset_commit(self, ctx: RequestContext, request: Any) -> Result:
        response, records = self.offsets.commit(ctx, request)
        return self.out.drain(response, records=records, replay=True)

    def offset_fetch(self, ctx: RequestContext, request: Any) -> Result:
        return self.out.drain(self.offsets.fetch(ctx, request))

    def txn_offset_commit(self, ctx: RequestContext, request: Any) -> Result:
        """Appended as the producer's transactional batch (``Result.producer``)."""
        response, records = txn_offsets.txn_offset_commit(
            self.groups, self.offsets, self.clock.now_ms(), ctx, request
        )
        result = self.out.drain(response, records=records, replay=True)
        return dataclasses.replace(result, producer=(request.producer_id, request.producer_epoch))

    def validate_txn_offset_commit(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        """KIP-447 fencing of a transactional commit by the group's current membership:
        NONE, or ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID /
        COORDINATOR_NOT_AVAILABLE (Kafka's ``validateOffsetCommit`` with ``isTransactional``)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.none if generation_id < 0 else ErrorCode.illegal_generation
        try:
            txn_offsets.validate_txn_offset_commit(group, member_id, instance_id, generation_id)
        except KafkaError as exc:
            return exc.code
        return ErrorCode.none

    def complete_txn(self, producer_id: int, commit: bool) -> None:
        """A marker for ``producer_id`` reached ``__consumer_offsets``: its pending offsets
        become committed (COMMIT) or vanish (ABORT) — Kafka's ``replayEndTransactionMarker``."""
        for group_id, pending in self.pending_txn_offsets.pop(producer_id).items():
            if not commit:
                continue
            if group_id not in self.groups:
                self.groups[group_id] = ClassicGroup(group_id, self.clock.now_ms())
            for (topic, partition), value in pending.items():
                self.offsets.put(group_id, topic, partition, value)

    def describe_groups(self, ctx: RequestContext, request: Any) -> Result:
        return self.out.drain(admin.describe_groups(self.groups, ctx, request))

    def list_groups(self, ctx: RequestContext, request: Any) -> Result:
        return self.out.drain(admin.list_groups(self.groups, ctx, request))

    def delete_groups(self, ctx: RequestContext, request: Any) -> Result:
        response, records = admin.delete_groups(self.groups, self.offsets, ctx, request)
        return self.out.drain(response, records=records, replay=True)

    def offset_delete(self, ctx: RequestContext, request: Any) -> Result:
        response, records = admin.offset_delete(self.groups, self.offsets, ctx, request)
        return self.out.drain(response, records=records, replay=True)

    def cleanup_expired_offsets(self) -> Result:
        """Offsets retention, then re-arm the check (``offsets.retention.check.interval.ms``)."""
        records = self.offsets.expired_records()
        self.schedule_offsets_cleanup()
        return self.out.drain(records=records, replay=True)

    def schedule_offsets_cleanup(self) -> None:
        self.timer.schedule(
            "offsets-retention",
            self.config.offsets_retention_check_interval_ms,
            self.cleanup_expired_offsets,
        )

    # -- persistence ------------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord, producer_id: int = -1) -> None:
        """Apply one ``__consumer_offsets`` record (at load, and for ``replay=True`` results);
        a transactional one (``producer_id >= 0``) is held pending until its marker."""
        self.replay_bytes(record.key, record.value, producer_id)

    def replay_bytes(
        self, key_bytes: bytes, value_bytes: bytes | None, producer_id: int = -1
    ) -> None:
        replay_record(
            self.groups, self.offsets, self.pending_txn_offsets, key_bytes, value_bytes, producer_id
        )

    def on_loaded(self) -> Result:
        """Restart every loaded member's session timer; rebalance groups over group.max.size."""
        for group in self.groups.values():
            for member in list(group.members.values()):
                self.engine.reschedule_heartbeat(group, member)
            if len(group.members) > self.config.max_size and group.can_rebalance():
                self.engine.prepare_rebalance(group)
        self.schedule_offsets_cleanup()
        return self.out.drain()

    def unload(self) -> Result:
        """This broker stops coordinating: groups die, parked requests get NOT_COORDINATOR."""
        for group in self.groups.values():
            for member in group.members.values():
                self.out.complete_join(member, ErrorCode.not_coordinator, member.member_id)
                self.out.complete_sync(
                    member, ErrorCode.not_coordinator, assignment=member.assignment
                )
            group.state = GroupState.DEAD
        self.groups.clear()
        return self.out.drain()

    def rebalances_total(self, group_id: str) -> int:
        return self.engine.rebalances_total.get(group_id, 0)
