"""What every coordinator step returns: records to append, a reply, parked replies it answers."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from streamrt.errors import ErrorCode

__all__ = ("EMPTY_RESULT", "AppendCallback", "Completion", "CoordinatorRecord", "Result")


@dataclasses.dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One record for ``__consumer_offsets``; ``value is None`` is a tombstone."""

    key: bytes
    value: bytes | None
    group_id: str


#: (opaque handle of a parked request, the kio response that answers it); a ``None`` response
#: abandons the request: Kafka never answers it (a superseded JoinGroup).
Completion = tuple[object, Any]
#: Called by the runtime after the append: ``None`` on success, else the storage error code.
AppendCallback = Callable[[ErrorCode | None], "Result"]


@dataclasses.dataclass(frozen=True, slots=True)
class Result:
    """One step of the state machine (Kafka's ``CoordinatorResult``).

    The runtime appends ``records`` to ``__consumer_offsets`` first. If ``replay`` is set it then
    replays them into the coordinator (offset commits, deletions: "append, then apply"). Then it
    calls ``on_append`` (classic join/sync, which mutated the group in place and only finish
    their replies once the write is durable) and delivers ``completions`` and ``response``, in
    that order. ``response is None`` means the request is parked.
    """

    records: tuple[CoordinatorRecord, ...] = ()
    response: Any = None
    completions: tuple[Completion, ...] = ()
    replay: bool = False
    on_append: AppendCallback | None = None
    #: (producer id, epoch) for a TxnOffsetCommit: the records go in as that producer's
    #: transactional batch and are replayed as pending offsets.
    producer: tuple[int, int] | None = None

    def then(self, other: Result) -> Result:
        """Concatenate two steps taken in one event (the second's callback must be absent)."""
        if self.on_append is not None and other.on_append is not None:
            raise ValueError("cannot merge two append callbacks")
        if self.records and other.records and self.replay != other.replay:
            raise ValueError("cannot merge replayed and in-place records")
        return Result(
            records=self.records + other.records,
            response=other.response if other.response is not None else self.response,
            completions=self.completions + other.completions,
            replay=self.replay or other.replay,
            on_append=self.on_append or other.on_append,
            producer=self.producer or other.producer,
        )


EMPTY_RESULT = Result()
