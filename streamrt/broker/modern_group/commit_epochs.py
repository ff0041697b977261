"""KIP-1251 assignment epochs: the per-partition check of a commit sent at an older member
epoch (Kafka's ``createAssignmentEpochValidator`` of ``ConsumerGroup``/``StreamsGroup``).

A member that commits at the epoch it was last given passes as before. One whose commit was
sent before its epoch moved on (another member left, the group epoch bumped, the survivor got
a new epoch for the same partitions) still owns what it commits: it passes for each partition
it has held since that epoch, ``assignment_epoch(partition) <= client epoch < member epoch``;
any other partition (revoked since, never its own, owned by another member now) is refused
alone with STALE_MEMBER_EPOCH, so a zombie never overwrites its successor's offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from streamrt.errors import ErrorCode

__all__ = ("AssignmentEpochOf", "PartitionCheck", "assignment_epochs", "older_epoch_check")

#: the epoch at which the member got (topic, partition), or None if it does not hold it
AssignmentEpochOf = Callable[[str, int], "int | None"]
#: None if the commit of (topic, partition) is allowed, else its error
PartitionCheck = Callable[[str, int], "ErrorCode | None"]


def older_epoch_check(client_epoch: int, assignment_epoch: AssignmentEpochOf) -> PartitionCheck:
    """The check of a commit at ``client_epoch``, below the member's current epoch."""

    def check(topic: str, partition: int) -> ErrorCode | None:
        held_since = assignment_epoch(topic, partition)
        if held_since is None or client_epoch < held_since:
            return ErrorCode.stale_member_epoch
        return None

    return check


def assignment_epochs(
    held_since: AssignmentEpochOf,
    parts: Iterable[Mapping[str, frozenset[int]]],
    new_epoch: int,
) -> dict[tuple[str, int], int]:
    """The epochs a reconciled member holds its partitions (or active tasks) at: one it keeps
    keeps the epoch it got it at; one it gains now is assigned at ``new_epoch``, the epoch the
    member is given with it (Kafka's assignment builders, KIP-1251 / KAFKA-19779)."""
    out: dict[tuple[str, int], int] = {}
    for part in parts:
        for name, ps in part.items():
            for p in ps:
                was = held_since(name, p)
                out[(name, p)] = new_epoch if was is None else was
    return out
