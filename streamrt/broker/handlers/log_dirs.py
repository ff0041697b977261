"""DescribeLogDirs and AlterReplicaLogDirs: this node has one log directory.

Every replica already lives in it, so moving one there is Kafka's no-op (NONE); any other
directory is not in the broker's config: LOG_DIR_NOT_FOUND, as ``LogManager.isLogDirOnline``.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import ALTER, DESCRIBE, allowed_cluster
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DESCRIBE_LOG_DIRS, 1, 4, describe_log_dirs)
    table.register(ApiKey.ALTER_REPLICA_LOG_DIRS, 1, 2, alter_replica_log_dirs)


def _wanted(core: BrokerCore, req: Any) -> dict[str, list[int]]:
    """topic → partitions; null topics means all. Unknown ones are left out, as Kafka does."""
    topics = core.logs.topics()
    if req.topics is None:
        return {name: list(range(info.num_partitions)) for name, info in sorted(topics.items())}
    out: dict[str, list[int]] = {}
    for t in req.topics:
        info = topics.get(t.topic)
        if info is not None:
            out[t.topic] = [p for p in t.partitions if 0 <= p < info.num_partitions]
    return out


async def describe_log_dirs(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """DESCRIBE on the cluster, as Kafka: else no results (and, from v3, the error)."""
    if not allowed_cluster(core, ctx, DESCRIBE):
        return respond(
            ctx, throttle_time=0, error_code=ErrorCode.cluster_authorization_failed, results=[]
        )
    data_dir = core.logs.data_dir.resolve()
    topics = []
    for name, partitions in _wanted(core, req).items():
        rows = []
        for p in partitions:
            try:
                size = core.logs.log(name, p).size_bytes()
            except KafkaError:
                continue  # deleted meanwhile
            rows.append(
                {
                    "partition_index": p,
                    "partition_size": size,
                    "offset_lag": 0,
                    "is_future_key": False,
                }
            )
        topics.append({"name": name, "partitions": rows})
    usage = shutil.disk_usage(data_dir)
    result = {
        "error_code": ErrorCode.none,
        "log_dir": str(data_dir),
        "topics": topics,
        "total_bytes": usage.total,
        "usable_bytes": usage.free,
    }
    return respond(ctx, throttle_time=0, error_code=ErrorCode.none, results=[result])


def _is_log_dir(core: BrokerCore, path: str) -> bool:
    """Kafka compares absolute paths; a symlinked spelling of the directory counts too."""
    ours = {os.path.abspath(core.logs.data_dir), str(core.logs.data_dir.resolve())}
    return os.path.abspath(path) in ours


async def alter_replica_log_dirs(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    authorized = allowed_cluster(core, ctx, ALTER)
    topics = core.logs.topics()
    results: dict[str, list[dict[str, Any]]] = {}
    for target in req.dirs:
        known_dir = _is_log_dir(core, target.path)
        for t in target.topics:
            info = topics.get(t.name)
            for p in t.partitions:
                if not authorized:
                    code = ErrorCode.cluster_authorization_failed
                elif not known_dir:
                    code = ErrorCode.log_dir_not_found
                elif info is None or not 0 <= p < info.num_partitions:
                    code = ErrorCode.unknown_topic_or_partition
                else:
                    code = ErrorCode.none
                results.setdefault(t.name, []).append({"partition_index": p, "error_code": code})
    return respond(
        ctx,
        throttle_time=0,
        results=[{"topic_name": n, "partitions": ps} for n, ps in results.items()],
    )
