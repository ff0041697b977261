"""An asyncio admin client for any Kafka-protocol broker (streamrt's or Apache Kafka 2.3+).

It exists for KIP-345's admin call, removing static members by ``group.instance.id`` with one
batch LeaveGroup (v3+), which no Python client exposes; the group, topic and offset calls
around it make the CLI and the runtime self-sufficient.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from streamrt.admin import access, offsets, transactions
from streamrt.admin.access import AclBinding, ScramCredentialInfo
from streamrt.admin.cluster import Cluster, check
from streamrt.admin.connection import UnsupportedVersionError
from streamrt.admin.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from streamrt.admin.models import (
    ConfigEntry,
    GroupDescription,
    GroupListing,
    MemberDescription,
    NewTopic,
    OffsetAndMetadata,
    PartitionInfo,
    TopicDescription,
)
from streamrt.admin.security import AdminSecurity
from streamrt.client_config import ClientConfig
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey

__all__ = ("EARLIEST", "LATEST", "AdminClient")

LATEST, EARLIEST = -1, -2  # ListOffsets timestamps
_TOPIC_RESOURCE = 2
_CONFIG_SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}
_REMOVE_REASON = "removed by an operator (streamrt groups remove-members)"

Results = dict[str, KafkaError | None]


class AdminClient:
    """``async with AdminClient("host:9092") as admin: await admin.list_groups()``.

    Batch results map each name to ``None`` (success) or the :class:`KafkaError` for it;
    whole-request failures raise.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str = "streamrt-admin",
        request_timeout: float = 30.0,
        api_timeout: float = 60.0,
        retry_backoff: float = 0.1,
        config: ClientConfig | Mapping[str, Any] | Path | str | None = None,
    ) -> None:
        """``config``: Kafka client properties (a mapping, :class:`ClientConfig` or a
        properties file) for TLS and SASL: ``security.protocol``, ``ssl.*``, ``sasl.*``."""
        self._cluster = Cluster(
            bootstrap_servers,
            client_id=client_id,
            request_timeout=request_timeout,
            api_timeout=api_timeout,
            retry_backoff=retry_backoff,
            security=AdminSecurity.from_config(config),
        )

    async def __aenter__(self) -> AdminClient:
        await self._cluster.refresh_metadata()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._cluster.close()

    # -- groups ---------------------------------------------------------------------------

    async def list_groups(self) -> list[GroupListing]:
        """Every group on every broker (each broker lists only the groups it coordinates)."""
        await self._cluster.refresh_metadata()
        per_broker = await asyncio.gather(
            *(self._list_groups_on(node_id) for node_id in sorted(self._cluster.brokers))
        )
        return sorted((g for gs in per_broker for g in gs), key=lambda g: g.group_id)

    async def _list_groups_on(self, node_id: int) -> list[GroupListing]:
        async def attempt() -> list[GroupListing]:
            conn = await self._cluster.node(node_id)
            response = await conn.call(ApiKey.LIST_GROUPS, max_version=5)
            check(response.error_code, f"ListGroups on broker {node_id}")
            return [
                GroupListing(
                    group_id=str(g.group_id),
                    protocol_type=g.protocol_type,
                    state=getattr(g, "group_state", None),
                    coordinator_id=node_id,
                )
                for g in response.groups
            ]

        return await self._cluster.retrying(f"ListGroups on {node_id}", attempt)

    async def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupDescription]:
        """State, protocol and members; a group that does not exist is described as ``Dead``."""
        found = await asyncio.gather(*(self._describe_group(g) for g in group_ids))
        return dict(zip(group_ids, found, strict=True))

    async def _describe_group(self, group_id: str) -> GroupDescription:
        async def attempt() -> GroupDescription:
            conn = await self._coordinator(group_id)
            response = await conn.call(
                ApiKey.DESCRIBE_GROUPS,
                max_version=6,
                groups=[group_id],
                include_authorized_operations=False,
            )
            (group,) = response.groups
            message = getattr(group, "error_message", None)
            self._check_group(group.error_code, f"DescribeGroups {group_id!r}", group_id, message)
            consumer = group.protocol_type == "consumer"
            return GroupDescription(
                group_id=str(group.group_id),
                state=group.group_state,
                protocol_type=group.protocol_type,
                protocol=group.protocol_data,
                members=tuple(_member(m, consumer) for m in group.members),
                coordinator_id=self._coordinator_id(group_id),
            )

        return await self._cluster.retrying(f"DescribeGroups {group_id}", attempt)

    async def streams_group_instance_ids(self, group_id: str) -> list[str]:
        """The ``group.instance.id``s of a streams group's static members (StreamsGroupDescribe,
        API 89: a streams group is not a classic one, DescribeGroups does not list its
        members); a member at epoch -2 (stopped, its tasks waiting) is listed too."""

        async def attempt() -> list[str]:
            conn = await self._coordinator(group_id)
            response = await conn.call(
                ApiKey.STREAMS_GROUP_DESCRIBE,
                group_ids=[group_id],
                include_authorized_operations=False,
            )
            (group,) = response.groups
            message = getattr(group, "error_message", None)
            what = f"StreamsGroupDescribe {group_id!r}"
            self._check_group(group.error_code, what, group_id, message)
            return sorted(str(m.instance_id) for m in group.members if m.instance_id)

        return await self._cluster.retrying(f"StreamsGroupDescribe {group_id}", attempt)

    async def remove_members(self, group_id: str, instance_ids: Sequence[str]) -> Results:
        """Remove static members by ``group.instance.id`` in one LeaveGroup v3+ (KIP-345).

        The coordinator rebalances at once instead of waiting ``session.timeout.ms``. Every
        requested id gets a result; ids the group does not know get UNKNOWN_MEMBER_ID.
        """
        wanted = list(dict.fromkeys(instance_ids))
        if not wanted:
            return {}

        async def attempt() -> Results:
            conn = await self._coordinator(group_id)
            try:
                version = conn.version_for(ApiKey.LEAVE_GROUP, min_version=3, max_version=5)
            except UnsupportedVersionError:
                top = conn.broker_versions.get(ApiKey.LEAVE_GROUP, (0, -1))[1]
                raise UnsupportedVersionError(
                    f"the coordinator of group {group_id!r} ({conn.address}) supports "
                    f"LeaveGroup up to v{top}; removing members by group.instance.id needs "
                    "v3+ (Apache Kafka 2.3 or later)"
                ) from None
            response = await conn.call(
                ApiKey.LEAVE_GROUP,
                min_version=version,
                max_version=version,
                group_id=group_id,
                members=[
                    {"member_id": "", "group_instance_id": i, "reason": _REMOVE_REASON}
                    for i in wanted
                ],
            )
            self._check_group(response.error_code, f"LeaveGroup {group_id!r}", group_id)
            answered: Results = {}
            for m in response.members:
                code = ErrorCode(int(m.error_code))
                error = None if code == ErrorCode.none else KafkaError(code, code.name.upper())
                answered[str(m.group_instance_id)] = error
            return {
                i: answered[i]
                if i in answered
                else KafkaError(ErrorCode.unknown_member_id, "missing from the LeaveGroup response")
                for i in wanted
            }

        return await self._cluster.retrying(f"LeaveGroup {group_id}", attempt)

    async def delete_groups(self, group_ids: Sequence[str]) -> Results:
        """Delete empty groups and their committed offsets (NON_EMPTY_GROUP if members remain)."""
        found = await asyncio.gather(*(self._delete_group(g) for g in group_ids))
        return dict(zip(group_ids, found, strict=True))

    async def _delete_group(self, group_id: str) -> KafkaError | None:
        async def attempt() -> KafkaError | None:
            conn = await self._coordinator(group_id)
            response = await conn.call(ApiKey.DELETE_GROUPS, max_version=2, groups_names=[group_id])
            (result,) = [r for r in response.results if r.group_id == group_id]
            code = ErrorCode(int(result.error_code))
            if code in (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available):
                self._cluster.forget_coordinator(group_id)
                raise KafkaError(code, f"DeleteGroups {group_id!r}: {code.name.upper()}")
            if code == ErrorCode.coordinator_load_in_progress:
                raise KafkaError(code, f"DeleteGroups {group_id!r}: {code.name.upper()}")
            return None if code == ErrorCode.none else KafkaError(code, code.name.upper())

        return await self._cluster.retrying(f"DeleteGroups {group_id}", attempt)

    async def fetch_committed_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], OffsetAndMetadata]:
        """The group's committed offsets (all of them when ``partitions`` is None)."""
        by_topic: dict[str, list[int]] | None = None
        if partitions is not None:
            by_topic = collections.defaultdict(list)
            for topic, partition in partitions:
                by_topic[topic].append(partition)
        topics = (
            None
            if by_topic is None
            else [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        )

        async def attempt() -> dict[tuple[str, int], OffsetAndMetadata]:
            conn = await self._coordinator(group_id)
            response = await conn.call(
                ApiKey.OFFSET_FETCH,
                min_version=2,  # v2+: null topics means "all"
                max_version=9,  # v10 names topics by id
                group_id=group_id,
                topics=topics,
                groups=[{"group_id": group_id, "topics": topics}],
                require_stable=False,
            )
            result = response.groups[0] if response.__version__ >= 8 else response
            self._check_group(result.error_code, f"OffsetFetch {group_id!r}", group_id)
            out: dict[tuple[str, int], OffsetAndMetadata] = {}
            for t in result.topics:
                for p in t.partitions:
                    check(p.error_code, f"OffsetFetch {group_id!r} {t.name}-{p.partition_index}")
                    if p.committed_offset >= 0:
                        epoch = int(getattr(p, "committed_leader_epoch", -1))
                        out[(str(t.name), int(p.partition_index))] = OffsetAndMetadata(
                            offset=int(p.committed_offset),
                            metadata=p.metadata,
                            leader_epoch=epoch if epoch >= 0 else None,
                        )
            return out

        return await self._cluster.retrying(f"OffsetFetch {group_id}", attempt)

    async def _coordinator(self, group_id: str) -> Any:
        return await self._cluster.coordinator(group_id)

    def _coordinator_id(self, group_id: str) -> int:
        return self._cluster.known_coordinator(group_id)

    def _check_group(self, code: Any, what: str, group_id: str, message: str | None = None) -> None:
        """Like :func:`check`, and forget the coordinator when the group has moved."""
        if ErrorCode(int(code)) in (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available):
            self._cluster.forget_coordinator(group_id)
        check(code, what, message)

    # -- topics ---------------------------------------------------------------------------

    async def list_topics(self, *, include_internal: bool = False) -> dict[str, TopicDescription]:
        response = await self._cluster.metadata(None)
        topics = (_topic(t) for t in response.topics if t.error_code == ErrorCode.none)
        return {t.name: t for t in topics if include_internal or not t.is_internal}

    async def describe_topics(self, names: Sequence[str]) -> dict[str, TopicDescription]:
        """Raise UNKNOWN_TOPIC_OR_PARTITION (a :class:`KafkaError`) for a missing topic."""
        response = await self._cluster.metadata(list(names))
        out: dict[str, TopicDescription] = {}
        for t in response.topics:
            check(t.error_code, f"Metadata for topic {t.name!r}")
            out[str(t.name)] = _topic(t)
        return out

    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False, timeout_ms: int = 30000
    ) -> Results:
        async def attempt() -> Results:
            conn = await self._cluster.controller()
            version = conn.version_for(ApiKey.CREATE_TOPICS, max_version=7)
            if version < 4 and any(
                t.num_partitions < 0 or t.replication_factor < 0 for t in topics
            ):
                raise UnsupportedVersionError(
                    f"{conn.address} supports CreateTopics up to v{version}, which needs an "
                    "explicit partition count and replication factor"
                )
            response = await conn.call(
                ApiKey.CREATE_TOPICS,
                min_version=version,
                max_version=version,
                topics=[
                    {
                        "name": t.name,
                        "num_partitions": t.num_partitions,
                        "replication_factor": t.replication_factor,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
                    }
                    for t in topics
                ],
                timeout=timeout_ms,
                validate_only=validate_only,
                response_timeout=timeout_ms / 1000 + self._cluster.request_timeout,
            )
            return _topic_results(response.topics, "CreateTopics")

        return await self._cluster.retrying("CreateTopics", attempt)

    async def delete_topics(self, names: Sequence[str], *, timeout_ms: int = 30000) -> Results:
        async def attempt() -> Results:
            conn = await self._cluster.controller()
            response = await conn.call(
                ApiKey.DELETE_TOPICS,
                max_version=6,
                topic_names=list(names),
                topics=[{"name": n, "topic_id": None} for n in names],
                timeout=timeout_ms,
                response_timeout=timeout_ms / 1000 + self._cluster.request_timeout,
            )
            return _topic_results(response.responses, "DeleteTopics")

        return await self._cluster.retrying("DeleteTopics", attempt)

    async def describe_topic_configs(
        self, names: Sequence[str]
    ) -> dict[str, dict[str, ConfigEntry]]:
        conn = await self._cluster.any_broker()
        response = await conn.call(
            ApiKey.DESCRIBE_CONFIGS,
            max_version=4,
            resources=[
                {"resource_type": _TOPIC_RESOURCE, "resource_name": n, "configuration_keys": None}
                for n in names
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        out: dict[str, dict[str, ConfigEntry]] = {}
        for r in response.results:
            check(r.error_code, f"DescribeConfigs for topic {r.resource_name!r}", r.error_message)
            out[r.resource_name] = {
                c.name: ConfigEntry(
                    name=c.name,
                    value=c.value,
                    read_only=bool(c.read_only),
                    is_sensitive=bool(c.is_sensitive),
                    source=_CONFIG_SOURCES.get(int(c.config_source), "UNKNOWN"),
                )
                for c in r.configs
            }
        return out

    async def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        timestamp: int = LATEST,
        *,
        read_committed: bool = False,
    ) -> dict[tuple[str, int], int]:
        """Offsets at ``timestamp`` (ms, or :data:`LATEST` / :data:`EARLIEST`) from the leaders;
        ``read_committed``: the log end is the last stable offset."""
        return await offsets.list_offsets(
            self._cluster, partitions, timestamp, read_committed=read_committed
        )

    async def delete_records(
        self, before: Mapping[tuple[str, int], int], *, timeout_ms: int = 30_000
    ) -> offsets.DeletedRecords:
        """Delete each partition's records before its offset (DeleteRecords): its new log
        start offset, or its error."""
        return await offsets.delete_records(self._cluster, before, timeout_ms=timeout_ms)

    # -- transactions (see streamrt.admin.transactions) -----------------------------------

    async def fence_transaction(self, transactional_id: str, timeout_ms: int) -> bool:
        """InitProducerId: fence the id's producer and abort its open transaction; False while
        the coordinator is still completing one (CONCURRENT_TRANSACTIONS)."""
        return await self._cluster.retrying(
            f"InitProducerId {transactional_id}",
            lambda: transactions.fence_transaction(self._cluster, transactional_id, timeout_ms),
        )

    # -- ACLs and SCRAM users (see streamrt.admin.access) ---------------------------------

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[KafkaError | None]:
        return await access.create_acls(self._cluster, bindings)

    async def describe_acls(self, acl_filter: AclBinding) -> list[AclBinding]:
        return await access.describe_acls(self._cluster, acl_filter)

    async def delete_acls(self, acl_filter: AclBinding) -> list[AclBinding]:
        return await access.delete_acls(self._cluster, acl_filter)

    async def describe_scram_users(
        self, users: Sequence[str] | None = None
    ) -> dict[str, list[ScramCredentialInfo] | KafkaError]:
        return await access.describe_scram_users(self._cluster, users)

    async def alter_scram_users(
        self,
        *,
        upsert: Sequence[tuple[str, str, str, int]] = (),
        delete: Sequence[tuple[str, str]] = (),
    ) -> Results:
        return await access.alter_scram_users(self._cluster, upsert=upsert, delete=delete)


def _member(m: Any, consumer: bool) -> MemberDescription:
    subscription = assignment = None
    if consumer:  # other protocol types (e.g. "connect") have their own formats
        with contextlib.suppress(ConsumerProtocolError):
            subscription = decode_subscription(m.member_metadata) if m.member_metadata else None
        with contextlib.suppress(ConsumerProtocolError):
            assignment = decode_assignment(m.member_assignment) if m.member_assignment else None
    return MemberDescription(
        member_id=m.member_id,
        group_instance_id=getattr(m, "group_instance_id", None),
        client_id=m.client_id,
        client_host=m.client_host,
        subscription=subscription,
        assignment=assignment,
        metadata=m.member_metadata,
        assignment_bytes=m.member_assignment,
    )


def _topic(t: Any) -> TopicDescription:
    topic_id = getattr(t, "topic_id", None)
    return TopicDescription(
        name=str(t.name),
        topic_id=str(topic_id) if topic_id is not None and topic_id.int else None,
        is_internal=bool(getattr(t, "is_internal", False)),
        partitions=tuple(
            sorted(
                (
                    PartitionInfo(
                        partition=int(p.partition_index),
                        leader=int(p.leader_id),
                        replicas=tuple(int(r) for r in p.replica_nodes),
                        isr=tuple(int(r) for r in p.isr_nodes),
                    )
                    for p in t.partitions
                ),
                key=lambda p: p.partition,
            )
        ),
    )


def _topic_results(entries: Iterable[Any], api: str) -> Results:
    """Per-topic results; NOT_CONTROLLER is raised so the whole request is retried."""
    out: Results = {}
    for e in entries:
        code = ErrorCode(int(e.error_code))
        if code == ErrorCode.not_controller:
            raise KafkaError(code, f"{api}: {code.name.upper()}")
        message = getattr(e, "error_message", None) or code.name
        out[str(e.name)] = None if code == ErrorCode.none else KafkaError(code, message)
    return out
