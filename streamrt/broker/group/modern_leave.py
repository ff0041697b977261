"""LeaveGroup to a consumer or a streams group: the edge between the wire and the modern
coordinators' ``remove_members`` (Kafka's ``classicGroupLeave`` routes by group type the same
way). It is how an admin removes static members by ``group.instance.id`` (scale-in without
waiting for the session timeout); the classic groups keep their own handler.

The removal changes the group in place (as a heartbeat does), so the reply waits for the
append: on a storage error the group is put back as it was and the LeaveGroup fails whole,
so an operator never reads "removed" for a removal that is not durable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from streamrt.broker.coordination.result import CoordinatorRecord, Result
from streamrt.broker.group.coordinator import GroupCoordinator
from streamrt.errors import ErrorCode
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import leave_response

__all__ = ("RemovingCoordinator", "leave_group", "leave_modern_group")


class RemovingCoordinator(Protocol):
    """What this edge needs of the consumer or streams coordinator."""

    @property
    def groups(self) -> Mapping[str, object]: ...

    def remove_members(
        self, group_id: str, identities: Sequence[tuple[str, str | None]]
    ) -> tuple[list[ErrorCode], tuple[CoordinatorRecord, ...]]: ...

    def snapshot(self, group_id: str) -> Any: ...

    def restore(self, group_id: str, before: Any) -> None: ...


def leave_group(
    classic: GroupCoordinator,
    owners: Sequence[RemovingCoordinator],
    ctx: RequestContext,
    request: Any,
    reply: object,
) -> Result:
    """A LeaveGroup, by the coordinator of the group's type (a group id no consumer or
    streams group holds is a classic one's, or none's)."""
    for owner in owners:
        if request.group_id in owner.groups:
            return leave_modern_group(owner, ctx, request, reply)
    return classic.leave_group(ctx, request)


def leave_modern_group(
    owner: RemovingCoordinator, ctx: RequestContext, request: Any, reply: object
) -> Result:
    """The LeaveGroup ``request`` for ``owner``'s group (it holds ``request.group_id``):
    answered at once if nothing changed, else parked on ``reply`` until the append."""
    version = ctx.api_version
    if version >= 3:
        identities = [(m.member_id, m.group_instance_id) for m in request.members]
    else:  # v0-2 name one member, never by instance id
        identities = [(request.member_id, None)]
    group_id = request.group_id
    before = owner.snapshot(group_id)
    codes, records = owner.remove_members(group_id, identities)
    answer = leave_response(
        version,
        ErrorCode.none,
        [(mid, iid, code) for (mid, iid), code in zip(identities, codes, strict=True)],
    )
    if not records:
        return Result(response=answer)

    def on_append(error: ErrorCode | None) -> Result:
        if error is None:
            return Result(completions=((reply, answer),))
        owner.restore(group_id, before)  # not durable: undone, timers re-armed
        return Result(completions=((reply, leave_response(version, error)),))

    return Result(records=records, on_append=on_append)
