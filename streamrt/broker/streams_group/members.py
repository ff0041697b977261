"""Per-member steps of a heartbeat: take the request's fields over, check the member epoch and
the owned tasks (Kafka's ``StreamsGroupMember.Builder.maybeUpdate*``,
``throwIfStreamsGroupMemberEpochIsInvalid`` and ``throwIfRequestContainsInvalidTasks``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streamrt.broker.modern_group.member import member_changes
from streamrt.broker.streams_group.member import StreamsMember, Tasks
from streamrt.broker.streams_group.requests import StreamsHeartbeatRequest
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("apply_fields", "check_epoch", "check_tasks")


def apply_fields(member: StreamsMember, req: StreamsHeartbeatRequest) -> StreamsMember:
    """The member with what this heartbeat sent (a null field keeps the old value)."""
    changes = member_changes(req)
    if req.topology is not None:
        changes["topology_epoch"] = req.topology.epoch
    if req.process_id is not None:
        changes["process_id"] = req.process_id
    if req.user_endpoint is not None:
        changes["user_endpoint"] = req.user_endpoint
    if req.client_tags is not None:
        changes["client_tags"] = tuple(sorted(req.client_tags))
    return dataclasses.replace(member, **changes)  # type: ignore[arg-type]


def check_epoch(member: StreamsMember, req: StreamsHeartbeatRequest) -> None:
    """FENCED_MEMBER_EPOCH unless the epoch is the member's, or its previous one with owned
    tasks that fit its assignment (the answer that bumped it may have been lost)."""
    if req.member_epoch > member.member_epoch:
        raise KafkaError(
            ErrorCode.fenced_member_epoch,
            f"The streams group member has a greater member epoch ({req.member_epoch}) than "
            f"the one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin.",
        )
    if req.member_epoch < member.member_epoch:
        owned = req.owned if req.owned is not None else Tasks()
        if req.member_epoch != member.previous_member_epoch or not member.assigned.contains(owned):
            raise KafkaError(
                ErrorCode.fenced_member_epoch,
                f"The streams group member has a smaller member epoch ({req.member_epoch}) "
                f"than the one known by the group coordinator ({member.member_epoch}). The "
                "member must abandon all its partitions and rejoin.",
            )


def check_tasks(owned: Tasks | None, tasks: Mapping[str, int]) -> None:
    """INVALID_REQUEST for an owned task outside the (ready) topology."""
    if owned is None:
        return
    for role in (owned.active, owned.standby, owned.warmup):
        for sub, ps in role.items():
            if sub not in tasks:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Subtopology {sub} does not exist in the topology.",
                )
            for p in sorted(ps):
                if p < 0 or p >= tasks[sub]:
                    raise KafkaError(
                        ErrorCode.invalid_request,
                        f"Task {p} for subtopology {sub} is invalid. Number of tasks for this "
                        f"subtopology: {tasks[sub]}",
                    )
