"""A group member's offset requests: OffsetCommit with its generation, OffsetFetch.

Kept apart from :mod:`streamrt.membership.member` (the join/sync/heartbeat loop) because the
two jobs share only the coordinator connection: a commit is refused by the coordinator when
its generation is stale, and that refusal (:class:`CommitFailedError`) is what the owner acts
on; any other error is a :class:`KafkaError` the connection's retry already saw.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streamrt.errors import ErrorCode, KafkaError
from streamrt.membership.config import CommitFailedError
from streamrt.membership.protocol import TopicPartition
from streamrt.membership.requests import CoordinatorClient

__all__ = ("COMMIT_REFUSED", "GroupOffsetRequests")

#: the answers that mean "this member may no longer commit these offsets"
COMMIT_REFUSED = (
    ErrorCode.illegal_generation,
    ErrorCode.unknown_member_id,
    ErrorCode.rebalance_in_progress,
    ErrorCode.fenced_instance_id,
    ErrorCode.stale_member_epoch,  # a streams or consumer group member's epoch moved on
)


class GroupOffsetRequests:
    """OffsetCommit and OffsetFetch of one group, on ``client``'s coordinator connection."""

    def __init__(
        self, client: CoordinatorClient, group_id: str, *, member_epoch: bool = False
    ) -> None:
        """``member_epoch``: commits carry a member epoch (broker-driven groups: v9+)."""
        self.client = client
        self.group_id = group_id
        self.member_epoch = member_epoch

    async def commit(
        self,
        generation_id: int,
        member_id: str,
        offsets: Mapping[TopicPartition, int],
        metadata: str | None = None,
    ) -> None:
        """Commit ``offsets`` as of that generation; :class:`CommitFailedError` if refused."""
        if not offsets:
            return

        async def attempt() -> None:
            response = await self.client.commit(
                generation_id, member_id, offsets, metadata, member_epoch=self.member_epoch
            )
            for topic in response.topics:
                for p in topic.partitions:
                    self._check_commit(ErrorCode(int(p.error_code)), generation_id, topic.name, p)

        await self.client.cluster.retrying(f"OffsetCommit {self.group_id}", attempt)

    def _check_commit(self, code: ErrorCode, generation_id: int, topic: str, p: Any) -> None:
        if code == ErrorCode.none:
            return
        where = f"OffsetCommit {topic}-{p.partition_index} in generation {generation_id}"
        self.client.note(code)
        if code in COMMIT_REFUSED:
            raise CommitFailedError(code, f"{where}: {code.name.upper()}")
        raise KafkaError(code, f"{where}: {code.name.upper()}")

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The committed offsets of ``partitions`` (those with none are left out)."""
        wanted = list(partitions)

        async def attempt() -> dict[TopicPartition, int]:
            response = await self.client.fetch_offsets(wanted)
            code = ErrorCode(int(response.error_code))
            if code != ErrorCode.none:
                self.client.note(code)
                raise KafkaError(code, f"OffsetFetch {self.group_id}: {code.name}")
            out: dict[TopicPartition, int] = {}
            for t in response.topics:
                for p in t.partitions:
                    self._check_fetched(ErrorCode(int(p.error_code)), t.name, p.partition_index)
                    if p.committed_offset >= 0:
                        out[TopicPartition(str(t.name), int(p.partition_index))] = int(
                            p.committed_offset
                        )
            return out

        return await self.client.cluster.retrying(f"OffsetFetch {self.group_id}", attempt)

    def _check_fetched(self, code: ErrorCode, topic: str, partition: int) -> None:
        if code != ErrorCode.none:
            self.client.note(code)
            where = f"OffsetFetch {self.group_id} {topic}-{partition}"
            raise KafkaError(code, f"{where}: {code.name.upper()}")
