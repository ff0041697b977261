"""The group APIs as one member sends them to its coordinator, at negotiated versions.

Each call returns the response entity and leaves its error code to the caller (the member's
state machine decides what an error means); only "the coordinator moved" is handled here, by
forgetting the cached coordinator so the next call looks it up again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamrt.admin.cluster import Cluster
from streamrt.admin.connection import BrokerConnection
from streamrt.admin.security import AdminSecurity
from streamrt.errors import ErrorCode
from streamrt.membership.config import MemberConfig
from streamrt.membership.protocol import TopicPartition, by_topic
from streamrt.wire.api_keys import ApiKey

__all__ = ("COORDINATOR_MOVED", "CoordinatorClient")

PROTOCOL_TYPE = "consumer"
COORDINATOR_MOVED = frozenset(
    {
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_not_available,
        ErrorCode.coordinator_load_in_progress,
    }
)
_STATIC_MIN: dict[int, int] = {ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3, ApiKey.HEARTBEAT: 3}
_OFFSET_COMMIT_STATIC_MIN = 7
_NETWORK_SLACK_MS = 5_000


class CoordinatorClient:
    """Requests for one group, to its coordinator; owns the cluster connections."""

    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.cluster = Cluster(
            config.bootstrap_servers,
            client_id=config.client_id,
            request_timeout=config.request_timeout_ms / 1000,
            api_timeout=max(config.request_timeout_ms, config.rebalance_timeout_ms) / 1000,
            retry_backoff=config.retry_backoff_ms / 1000,
            security=AdminSecurity.from_config(dict(config.security) or None),
        )

    async def close(self) -> None:
        await self.cluster.close()

    async def _coordinator(self) -> BrokerConnection:
        return await self.cluster.coordinator(self.config.group_id)

    def note(self, code: int) -> None:
        """Forget the coordinator when an answer says it moved or is not ready."""
        if ErrorCode(code) in COORDINATOR_MOVED:
            self.cluster.forget_coordinator(self.config.group_id)

    def _min_version(self, api_key: int) -> int:
        return _STATIC_MIN.get(api_key, 0) if self.config.static else 0

    async def _call(self, api_key: int, max_version: int, **fields: Any) -> Any:
        conn = await self._coordinator()
        return await conn.call(
            api_key, min_version=self._min_version(api_key), max_version=max_version, **fields
        )

    async def join(self, member_id: str, protocol: str, metadata: bytes, reason: str) -> Any:
        """JoinGroup; the coordinator may hold it for up to the rebalance timeout."""
        conn = await self._coordinator()
        c = self.config
        return await conn.call(
            ApiKey.JOIN_GROUP,
            min_version=max(1, self._min_version(ApiKey.JOIN_GROUP)),
            max_version=9,
            response_timeout=(c.rebalance_timeout_ms + _NETWORK_SLACK_MS) / 1000,
            group_id=c.group_id,
            session_timeout=c.session_timeout_ms,
            rebalance_timeout=c.rebalance_timeout_ms,
            member_id=member_id,
            group_instance_id=c.group_instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=[{"name": protocol, "metadata": metadata}],
            reason=reason,
        )

    async def sync(
        self, generation: int, member_id: str, protocol: str, assignments: Mapping[str, bytes]
    ) -> Any:
        """SyncGroup; a follower's waits for the leader's (bounded by the rebalance timeout)."""
        conn = await self._coordinator()
        c = self.config
        return await conn.call(
            ApiKey.SYNC_GROUP,
            min_version=self._min_version(ApiKey.SYNC_GROUP),
            max_version=5,
            response_timeout=(c.rebalance_timeout_ms + _NETWORK_SLACK_MS) / 1000,
            group_id=c.group_id,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=c.group_instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=protocol,
            assignments=[{"member_id": m, "assignment": a} for m, a in assignments.items()],
        )

    async def heartbeat(self, generation: int, member_id: str) -> Any:
        c = self.config
        return await self._call(
            ApiKey.HEARTBEAT,
            4,
            group_id=c.group_id,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=c.group_instance_id,
        )

    async def leave(self, member_id: str, reason: str) -> Any:
        """LeaveGroup for this (dynamic) member: v3+ lists members, v0-2 name one."""
        return await self._call(
            ApiKey.LEAVE_GROUP,
            5,
            group_id=self.config.group_id,
            member_id=member_id,
            members=[{"member_id": member_id, "group_instance_id": None, "reason": reason}],
        )

    async def commit(
        self,
        generation: int,
        member_id: str,
        offsets: Mapping[TopicPartition, int],
        metadata: str | None,
        *,
        member_epoch: bool = False,
    ) -> Any:
        """OffsetCommit v2-8 with the generation and member identity; ``member_epoch``: v9+
        (KIP-848's and KIP-1071's groups, where the generation is the member epoch)."""
        c = self.config
        topics = [
            {
                "name": entry["topic"],
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": offsets[TopicPartition(entry["topic"], p)],
                        "committed_leader_epoch": -1,
                        "committed_metadata": metadata,
                        "commit_timestamp": -1,
                    }
                    for p in entry["partitions"]
                ],
            }
            for entry in by_topic(offsets)
        ]
        conn = await self._coordinator()
        return await conn.call(
            ApiKey.OFFSET_COMMIT,
            min_version=9 if member_epoch else _OFFSET_COMMIT_STATIC_MIN if c.static else 2,
            max_version=9 if member_epoch else 8,
            group_id=c.group_id,
            generation_id_or_member_epoch=generation,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=c.group_instance_id,
            retention_time=-1,
            topics=topics,
        )

    async def fetch_offsets(self, partitions: Iterable[TopicPartition]) -> Any:
        """OffsetFetch v2-7 for ``partitions`` (one group per request)."""
        topics = [
            {"name": e["topic"], "partition_indexes": e["partitions"]} for e in by_topic(partitions)
        ]
        return await self._call(
            ApiKey.OFFSET_FETCH,
            7,
            group_id=self.config.group_id,
            topics=topics,
            require_stable=True,
        )

    async def partition_counts(self, topics: Sequence[str]) -> dict[str, int]:
        """Topic → partition count for the leader's assignor; unknown topics are left out."""
        response = await self.cluster.metadata(sorted(set(topics)))
        counts: dict[str, int] = {}
        for t in response.topics:
            if ErrorCode(int(t.error_code)) == ErrorCode.none:
                counts[str(t.name)] = len(t.partitions)
        return counts
