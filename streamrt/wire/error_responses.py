"""The one way to answer a request with an error (Kafka's ``AbstractRequest.getErrorResponse``).

Used by the server when a handler raises, and by the group coordinator service when it refuses a
request before its state machine sees it (loading, stopped) or when a write fails. APIs whose
responses carry errors per item (per partition, per group) get a builder that mirrors the
request's items; every other API gets its top-level ``error_code``. Every field a builder does
not name is left empty (null, (), "", -1), as Kafka's generated responses default them.
``None`` means the API's response has no place for an error, and the connection is closed
instead, as Kafka does.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable
from typing import Any

from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for, field_info
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import (
    heartbeat_response,
    join_response,
    leave_response,
    sync_response,
)

__all__ = ("error_response",)

#: Kafka's -1 "no start time", as kio's datetime_i64 writer takes it
_EPOCH_MINUS_1 = datetime.datetime.fromtimestamp(-1 / 1000, tz=datetime.UTC)
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
    if "error_code" not in field_info(cls):
        raise TypeError(f"{cls.__name__} has no top-level error code")
    values: dict[str, Any] = {"error_code": code, "error_message": message}
    if version < 7 and "protocol_name" in field_info(cls):
        values["protocol_name"] = ""  # JoinGroup/SyncGroup: nullable only from v7
    return _respond(cls, **values)


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
    if "None" in str(f.type):
        return None
    if kafka_type is None:  # an array or a nested entity
        return ()
    return _EMPTY_BY_TYPE.get(kafka_type, -1)


def _complete(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (nested item dicts too) with every other required field of ``cls`` empty."""
    info = field_info(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        nested = info[f.name][1]
        if f.name not in values:
            if f.default is dataclasses.MISSING and not f.name.startswith("__"):
                out[f.name] = _empty(f)
        elif nested is not None and isinstance(values[f.name], list):
            out[f.name] = [_complete(nested, v) for v in values[f.name]]
        else:
            out[f.name] = values[f.name]
    return out


def _respond(cls: type, **values: Any) -> Any:
    """``cls`` with ``values``, no throttle and every field not given empty."""
    return build(cls, **_complete(cls, {"throttle_time": 0, **values}))


def _produce(cls: type, version: int, request: Any, code: ErrorCode, message: str | None) -> Any:
    def partitions(t: Any) -> list[dict[str, Any]]:
        return [
            {"index": p.index, "error_code": code, "error_message": message}
            for p in t.partition_data
        ]

    topics = [{"name": t.name, "partition_responses": partitions(t)} for t in request.topic_data]
    return _respond(cls, responses=topics)


def _partitions(cls: type, version: int, request: Any, code: ErrorCode, message: str | None) -> Any:
    """ListOffsets, OffsetCommit, TxnOffsetCommit: the request's topics and partitions."""
    topics = [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p.partition_index, "error_code": code} for p in t.partitions
            ],
        }
        for t in request.topics
    ]
    return _respond(cls, topics=topics)


def _create_topics(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    topics = [
        {"name": t.name, "error_code": code, "error_message": message, "configs": []}
        for t in request.topics
    ]
    return _respond(cls, topics=topics)


def _offset_fetch(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    if version >= 8:
        groups = [{"group_id": g.group_id, "error_code": code} for g in request.groups]
        return _respond(cls, groups=groups)
    return _respond(cls, error_code=code)


def _describe_groups(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    groups = [
        {"error_code": code, "group_id": gid, "authorized_operations": _NO_OPERATIONS}
        for gid in request.groups
    ]
    return _respond(cls, groups=groups)


def _delete_groups(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    results = [{"group_id": gid, "error_code": code} for gid in request.groups_names]
    return _respond(cls, results=results)


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
    return _respond(cls, results_by_topic_v3_and_below=results)


def _describe_transactions(
    cls: type, version: int, request: Any, code: ErrorCode, message: str | None
) -> Any:
    states = [
        {
            "error_code": code,
            "transactional_id": i,
            "transaction_timeout": 0,
            "transaction_start_time": _EPOCH_MINUS_1,
        }
        for i in request.transactional_ids
    ]
    return _respond(cls, transaction_states=states)


_BUILDERS: dict[ApiKey, ErrorBuilder] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.LIST_OFFSETS: _partitions,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.OFFSET_COMMIT: _partitions,
    ApiKey.TXN_OFFSET_COMMIT: _partitions,
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
