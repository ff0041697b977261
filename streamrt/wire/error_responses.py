"""The one way to answer a request with an error (Kafka's ``AbstractRequest.getErrorResponse``).

Used by the server when a handler raises, and by the group coordinator service when it refuses a
request before its state machine sees it (loading, stopped) or when a write fails. APIs whose
responses carry errors per item (per partition, per group) get a builder that mirrors the
request's items; every other API gets its top-level ``error_code``. ``None`` means the API's
response has no place for an error, and the connection is closed instead, as Kafka does.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable
from typing import Any

from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import (
    heartbeat_response,
    join_response,
    leave_response,
    sync_response,
)

__all__ = ("error_response",)

#: Kafka's "authorized operations not requested" sentinel (Integer.MIN_VALUE).
_NO_OPERATIONS = -(2**31)

ErrorBuilder = Callable[[type, int, Any, ErrorCode, "str | None"], Any]


def error_response(
    ctx: RequestContext, request: Any, code: ErrorCode, message: str | None = None
) -> Any | None:
    """The response of ``ctx``'s API and version answering all of ``request`` with ``code``."""
    cls = codec_for(ctx.api_key, ctx.api_version).response_cls
    builder = _BUILDERS.get(ApiKey(ctx.api_key), _top_level)
    try:
        return builder(cls, ctx.api_version, request, code, message)
    except (TypeError, AttributeError):  # no place for an error in this version
        return None


def _top_level(cls: type, version: int, request: Any, code: ErrorCode, message: str | None) -> Any:
    """The top-level error; every other required field empty, as Kafka's ``getErrorResponse``."""
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.name.startswith("__")}
    if "error_code" not in fields:
        raise TypeError(f"{cls.__name__} has no top-level error code")
    values: dict[str, Any] = {"error_code": code, "error_message": message, "throttle_time": 0}
    if "protocol_name" in fields and version < 7:
        values["protocol_name"] = ""  # JoinGroup/SyncGroup: nullable only from v7
    for name, f in fields.items():
        if name not in values and f.default is dataclasses.MISSING:
            values[name] = _empty(f)
    return build(cls, **values)


_EMPTY_BY_TYPE: dict[str, Any] = {
    "string": "",
    "bytes": b"",
    "bool": False,
    "uuid": uuid.UUID(int=0),
    "datetime_i64": -1,
}


def _empty(f: dataclasses.Field[Any]) -> Any:
    """An empty value for a required field: null if nullable, else (), "", -1..."""
    kafka_type = f.metadata.get("kafka_type")
    hint = str(f.type)
    if "None" in hint:
        return None
    if kafka_type is None:  # an array or a nested entity
        return ()
    return _EMPTY_BY_TYPE.get(kafka_type, -1)


def _produce(cls: type, version: int, request: Any, code: ErrorCode, message: str | None) -> Any:
    responses = [
        {
            "name": t.name,
            "partition_responses": [
                {
                    "index": p.index,
                    "error_code": code,
                    "base_offset": -1,
                    "log_append_time": None,
                    "log_start_offset": -1,
                    "record_errors": [],
                    "error_message": message,
                }
                for p in t.partition_data
            ],
        }
        for t in request.topic_data
    ]
    return build(cls, throttle_time=0, responses=responses)


def _list_offsets(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    topics = [
        {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": code,
                    "timestamp": -1,
                    "offset": -1,
                    "leader_epoch": -1,
                }
                for p in t.partitions
            ],
        }
        for t in request.topics
    ]
    return build(cls, throttle_time=0, topics=topics)


def _create_topics(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    topics = [
        {
            "name": t.name,
            "error_code": code,
            "error_message": message,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        }
        for t in request.topics
    ]
    return build(cls, throttle_time=0, topics=topics)


def _offset_commit(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    topics = [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p.partition_index, "error_code": code} for p in t.partitions
            ],
        }
        for t in request.topics
    ]
    return build(cls, throttle_time=0, topics=topics)


def _offset_fetch(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    if version >= 8:
        groups = [
            {"group_id": g.group_id, "topics": [], "error_code": code} for g in request.groups
        ]
        return build(cls, throttle_time=0, groups=groups)
    return build(cls, throttle_time=0, topics=[], error_code=code)


def _describe_groups(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    groups = [
        {
            "error_code": code,
            "group_id": gid,
            "group_state": "",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": _NO_OPERATIONS,
        }
        for gid in request.groups
    ]
    return build(cls, throttle_time=0, groups=groups)


def _delete_groups(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    results = [{"group_id": gid, "error_code": code} for gid in request.groups_names]
    return build(cls, throttle_time=0, results=results)


def _add_partitions_to_txn(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    results = [
        {
            "name": t.name,
            "results_by_partition": [
                {"partition_index": p, "partition_error_code": code} for p in t.partitions
            ],
        }
        for t in request.v3_and_below_topics
    ]
    return build(cls, throttle_time=0, results_by_topic_v3_and_below=results)


def _describe_transactions(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    epoch_minus_1 = datetime.datetime.fromtimestamp(-1 / 1000, tz=datetime.UTC)
    states = [
        {
            "error_code": code,
            "transactional_id": txn_id,
            "transaction_state": "",
            "transaction_timeout": 0,
            "transaction_start_time": epoch_minus_1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        for txn_id in request.transactional_ids
    ]
    return build(cls, throttle_time=0, transaction_states=states)


_BUILDERS: dict[ApiKey, ErrorBuilder] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.TXN_OFFSET_COMMIT: _offset_commit,  # same per-partition shape
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.JOIN_GROUP: lambda cls, v, req, code, msg: join_response(v, code, req.member_id),
    ApiKey.HEARTBEAT: lambda cls, v, req, code, msg: heartbeat_response(v, code),
    ApiKey.LEAVE_GROUP: lambda cls, v, req, code, msg: leave_response(v, code),
    ApiKey.SYNC_GROUP: lambda cls, v, req, code, msg: sync_response(v, code),
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.DELETE_GROUPS: _delete_groups,
}
