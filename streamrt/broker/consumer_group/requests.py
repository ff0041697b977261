"""ConsumerGroupHeartbeat as the state machine sees it (topic names, not ids), and its checks.

The handler translates topic ids to names and back; these types carry no wire detail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streamrt.broker.consumer_group.assignors import Assignment
from streamrt.broker.consumer_group.member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from streamrt.broker.consumer_group.regex import InvalidRegex, compile_regex
from streamrt.broker.coordination.result import CoordinatorRecord
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("HeartbeatAnswer", "HeartbeatRequest", "validate")


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """Fields left ``None`` (and a rebalance timeout of -1) did not change since the last one."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Mapping[str, frozenset[int]] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    #: sent on a join, a full request, or when the member's assignment changed
    assignment: Assignment | None = None
    #: what the heartbeat changed, for ``__consumer_offsets`` (appended before the answer)
    records: tuple[CoordinatorRecord, ...] = ()


def validate(req: HeartbeatRequest, assignors: tuple[str, ...]) -> None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``: INVALID_REQUEST with
    Kafka's messages, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION."""
    _validate_fields(req)
    _validate_epoch(req)
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise KafkaError(
            ErrorCode.unsupported_assignor,
            f"ServerAssignor {req.server_assignor} is not supported.",
        )
    if req.subscribed_topic_regex:
        try:
            compile_regex(req.subscribed_topic_regex)
        except InvalidRegex as exc:
            raise KafkaError(
                ErrorCode.invalid_regular_expression,
                f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular "
                f"expression: {_reason(exc)}.",
            ) from None


def _bad(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_request, message)


def _validate_fields(req: HeartbeatRequest) -> None:
    if not req.group_id.strip():
        raise _bad("GroupId can't be empty.")
    if req.version >= 1 and not req.member_id.strip():
        raise _bad("MemberId can't be empty.")
    if req.instance_id is not None and not req.instance_id.strip():
        raise _bad("InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id.strip():
        raise _bad("RackId can't be empty.")


def _validate_epoch(req: HeartbeatRequest) -> None:
    if req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH:
        if not req.member_id.strip():
            raise _bad("MemberId can't be empty.")
    elif req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise _bad("RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or any(req.owned.values()):
            raise _bad("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise _bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise _bad("InstanceId can't be null.")
    else:
        raise _bad(f"MemberEpoch {req.member_epoch} is invalid.")


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
