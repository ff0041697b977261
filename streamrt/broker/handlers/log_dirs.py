"""DescribeLogDirs: this node's one log directory, with each partition's size on disk."""

from __future__ import annotations

import shutil
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.DESCRIBE_LOG_DIRS, 1, 4, describe_log_dirs)


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
