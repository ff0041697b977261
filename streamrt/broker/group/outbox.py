"""Collects what one coordinator step produces, so deep helpers need not thread it through."""

from __future__ import annotations

from typing import Any

from streamrt.broker.coordination.result import AppendCallback, Completion, Result
from streamrt.broker.group.group import Member
from streamrt.broker.group.records import CoordinatorRecord
from streamrt.errors import ErrorCode
from streamrt.wire.group_responses import join_response, sync_response

__all__ = ("Outbox",)


class Outbox:
    """Parked replies answered and in-place group records written during the current step."""

    def __init__(self) -> None:
        self._completions: list[Completion] = []
        self._records: list[CoordinatorRecord] = []

    def record(self, record: CoordinatorRecord) -> None:
        self._records.append(record)

    def complete(self, handle: object, response: Any) -> None:
        self._completions.append((handle, response))

    def abandon(self, handle: object) -> None:
        """A parked request that will never be answered (Kafka drops it): a ``None`` response.

        The network layer can then stop waiting for it instead of holding its connection open
        until the broker stops.
        """
        self._completions.append((handle, None))

    def complete_join(
        self, member: Member, error: ErrorCode, member_id: str, **fields: Any
    ) -> bool:
        """Answer the member's parked JoinGroup, if any (Kafka's ``completeJoinFuture``)."""
        parked = member.awaiting_join
        if parked is None:
            return False
        member.awaiting_join = None
        self.complete(parked.handle, join_response(parked.api_version, error, member_id, **fields))
        return True

    def complete_sync(self, member: Member, error: ErrorCode, **fields: Any) -> bool:
        parked = member.awaiting_sync
        if parked is None:
            return False
        member.awaiting_sync = None
        self.complete(parked.handle, sync_response(parked.api_version, error, **fields))
        return True

    def discard(self) -> None:
        """Forget what a failed step collected."""
        self._completions.clear()
        self._records.clear()

    def drain(
        self,
        response: Any = None,
        *,
        records: tuple[CoordinatorRecord, ...] = (),
        replay: bool = False,
        on_append: AppendCallback | None = None,
    ) -> Result:
        """Everything collected so far plus the step's own reply, as one :class:`Result`."""
        collected = tuple(self._records)
        if collected and records:
            raise ValueError("a step cannot mix in-place and replayed records")
        result = Result(
            records=collected + records,
            response=response,
            completions=tuple(self._completions),
            replay=replay and not collected,
            on_append=on_append,
        )
        self._completions.clear()
        self._records.clear()
        return result
