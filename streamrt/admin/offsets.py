"""The admin client's partition-offset calls, each sent to the partitions' leaders.

ListOffsets (offsets at a time, the log end, or the last stable offset under read_committed)
and DeleteRecords (move log start offsets forward, as Kafka Streams purges its repartition
topics). Both group the partitions by leader from one Metadata answer and send one request per
leader; a partition error that means "the leader moved" retries the whole call (both requests
are idempotent).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from streamrt.admin.cluster import RETRIABLE, Cluster, check
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey

__all__ = ("DeletedRecords", "delete_records", "list_offsets")

TP = tuple[str, int]
#: each partition's new log start offset, or the error DeleteRecords answered for it
DeletedRecords = dict[TP, int | KafkaError]
T = TypeVar("T")
_READ_UNCOMMITTED, _READ_COMMITTED = 0, 1


async def list_offsets(
    cluster: Cluster, partitions: Iterable[TP], timestamp: int, *, read_committed: bool = False
) -> dict[TP, int]:
    """Offsets at ``timestamp`` from the leaders; with ``read_committed`` the log end is the
    last stable offset (ListOffsets v2+ IsolationLevel), as a read_committed consumer's end."""
    isolation = _READ_COMMITTED if read_committed else _READ_UNCOMMITTED

    async def on_leader(conn: Any, by_topic: Mapping[str, list[int]]) -> dict[TP, int]:
        response = await conn.call(
            ApiKey.LIST_OFFSETS,
            min_version=2 if read_committed else 1,
            max_version=9,
            replica_id=-1,
            isolation_level=isolation,
            topics=[
                {
                    "name": t,
                    "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1, "timestamp": timestamp}
                        for p in ps
                    ],
                }
                for t, ps in by_topic.items()
            ],
        )
        out: dict[TP, int] = {}
        for t in response.topics:
            for p in t.partitions:
                check(p.error_code, f"ListOffsets {t.name}-{p.partition_index}")
                out[(str(t.name), int(p.partition_index))] = int(p.offset)
        return out

    return await _per_leader(cluster, "ListOffsets", partitions, on_leader)


async def delete_records(
    cluster: Cluster, before: Mapping[TP, int], *, timeout_ms: int = 30_000
) -> DeletedRecords:
    """DeleteRecords: each partition's records before its offset go; a whole-request failure
    (a topic that does not exist, no broker) raises, a partition's own error is its result."""

    async def on_leader(conn: Any, by_topic: Mapping[str, list[int]]) -> DeletedRecords:
        response = await conn.call(
            ApiKey.DELETE_RECORDS,
            max_version=2,
            topics=[
                {
                    "name": t,
                    "partitions": [{"partition_index": p, "offset": before[(t, p)]} for p in ps],
                }
                for t, ps in by_topic.items()
            ],
            timeout=timeout_ms,
            response_timeout=timeout_ms / 1000 + cluster.request_timeout,
        )
        out: DeletedRecords = {}
        for t in response.topics:
            for p in t.partitions:
                code = ErrorCode(int(p.error_code))
                tp = (str(t.name), int(p.partition_index))
                if code in RETRIABLE:  # the leader moved: ask the new one
                    raise KafkaError(code, f"DeleteRecords {tp[0]}-{tp[1]}: {code.name.upper()}")
                ok = code == ErrorCode.none
                out[tp] = int(p.low_watermark) if ok else KafkaError(code, code.name.upper())
        return out

    return await _per_leader(cluster, "DeleteRecords", before, on_leader)


async def _per_leader(
    cluster: Cluster,
    what: str,
    partitions: Iterable[TP],
    on_leader: Callable[[Any, Mapping[str, list[int]]], Awaitable[dict[TP, T]]],
) -> dict[TP, T]:
    """``on_leader(connection, {topic: partitions})`` once per leader, retried as one call."""
    wanted = sorted(set(partitions))

    async def attempt() -> dict[TP, T]:
        if not wanted:
            return {}
        response = await cluster.metadata(sorted({t for t, _ in wanted}))
        leader_of: dict[TP, int] = {}
        for t in response.topics:
            check(t.error_code, f"Metadata for topic {t.name!r}")
            for p in t.partitions:
                leader_of[(str(t.name), int(p.partition_index))] = int(p.leader_id)
        leaders: dict[int, dict[str, list[int]]] = collections.defaultdict(
            lambda: collections.defaultdict(list)
        )
        for topic, partition in wanted:
            leader = leader_of.get((topic, partition))
            if leader is None:
                raise KafkaError(
                    ErrorCode.unknown_topic_or_partition, f"{topic}-{partition} does not exist"
                )
            if leader < 0:
                raise KafkaError(ErrorCode.leader_not_available, f"{topic}-{partition}: no leader")
            leaders[leader][topic].append(partition)
        conns = [(await cluster.node(n), tps) for n, tps in leaders.items()]
        found = await asyncio.gather(*(on_leader(conn, tps) for conn, tps in conns))
        return {tp: value for part in found for tp, value in part.items()}

    return await cluster.retrying(what, attempt)
