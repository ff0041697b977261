"""Produce and InitProducerId: appending client batches to partition logs."""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.log.batch import iter_headers
from streamrt.broker.security import (
    IDEMPOTENT_WRITE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    allowed,
    allowed_cluster,
    allowed_on_any,
    require,
)
from streamrt.broker.security.txn_access import guarded as txn_guarded
from streamrt.broker.security.txn_access import internal_topic
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

logger = logging.getLogger(__name__)

_MAX_EPOCH = 32767


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.PRODUCE, 3, 12, produce)
    table.register(ApiKey.INIT_PRODUCER_ID, 0, 5, init_producer_id)


def _partition_error(index: int, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": code,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": message,
    }


async def _append(
    core: BrokerCore, topic: str, index: int, records: bytes | None
) -> dict[str, Any]:
    try:
        if not records:
            raise KafkaError(ErrorCode.corrupt_message, "empty records")
        log = core.logs.log(topic, index)
        now = core.clock.now_ms()
        if core.config["streamrt.log.fsync"] == "always":
            # fsync happens inside append: keep it off the event loop.
            info = await asyncio.to_thread(log.append, bytes(records), now)
        else:
            info = log.append(bytes(records), now)
    except KafkaError as exc:
        if exc.code not in (ErrorCode.unknown_topic_or_partition,):
            logger.info("produce to %s-%d rejected: %s (%s)", topic, index, exc.code.name, exc)
        return _partition_error(index, exc.code, str(exc))
    append_time = (
        datetime.datetime.fromtimestamp(info.log_append_time_ms / 1000, tz=datetime.UTC)
        if info.log_append_time_ms >= 0
        else None
    )
    return {
        "index": index,
        "error_code": 0,
        "base_offset": info.base_offset,
        "log_append_time": append_time,
        "log_start_offset": info.log_start_offset,
        "record_errors": [],
        "error_message": None,
    }


def _transactional_error(
    core: BrokerCore, ctx: RequestContext, req: Any, topic: str, index: int, records: bytes | None
) -> tuple[ErrorCode, str] | None:
    """A transactional batch needs a transactional.id, and its partition must be in the
    producer's ongoing transaction (KIP-890 part 1, checked in-process)."""
    try:
        h = next(iter_headers(records or b"", check_crc=False))
    except (KafkaError, StopIteration):
        return None  # the append reports the bad records
    if not h.is_transactional or h.is_control:
        return None
    if req.transactional_id is None:
        return (
            ErrorCode.transactional_id_authorization_failed,
            "transactional batch without a transactional.id",
        )
    if not allowed(core, ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
        return ErrorCode.transactional_id_authorization_failed, "no WRITE on the transactional.id"
    if core.txn is None:
        return ErrorCode.coordinator_not_available, "transaction coordinator not running"
    code = core.txn.verify(req.transactional_id, h.producer_id, h.producer_epoch, (topic, index))
    if code is ErrorCode.none:
        return None
    if code is ErrorCode.invalid_producer_id_mapping:
        code = ErrorCode.invalid_txn_state
    return code, f"transactional produce to {topic}-{index} refused"


async def produce(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    global_error: tuple[ErrorCode, str] | None = None
    if req.acks not in (0, 1, -1):
        global_error = (ErrorCode.invalid_required_acks, f"acks={req.acks}")
    responses = []
    appended: list[tuple[str, int]] = []
    for topic in req.topic_data:
        parts = []
        for p in topic.partition_data:
            error = global_error
            if error is None and (denied := _denied(core, ctx, topic.name)) is not None:
                error = (denied.code, str(denied))
            if error is None:
                error = _transactional_error(core, ctx, req, topic.name, p.index, p.records)
            if error is not None:
                parts.append(_partition_error(p.index, *error))
            else:
                parts.append(await _append(core, topic.name, p.index, p.records))
                if parts[-1]["error_code"] == 0:
                    appended.append((topic.name, p.index))
        responses.append({"name": topic.name, "partition_responses": parts})
    core.data_arrived.notify(appended)  # only the fetches parked on these partitions
    if req.acks == 0:
        return None
    return respond(ctx, responses=responses, throttle_time=0)


def _denied(core: BrokerCore, ctx: RequestContext, topic: str) -> KafkaError | None:
    """WRITE on the topic; then, as Kafka's ``ReplicaManager``, no client appends to an internal
    topic (the coordinators write those themselves), whatever the ACLs."""
    try:
        require(core, ctx, WRITE, TOPIC, topic)
    except KafkaError as exc:
        return exc
    if internal_topic(topic):
        return KafkaError(
            ErrorCode.invalid_topic_exception, f"Cannot append to internal topic {topic}"
        )
    return None


async def init_producer_id(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if req.transactional_id is not None:
        if core.txn is None:
            raise KafkaError(ErrorCode.coordinator_not_available, "no transaction coordinator")
        return await txn_guarded(core, ctx, req, core.txn.handle)  # WRITE on the id
    if not (
        allowed_cluster(core, ctx, IDEMPOTENT_WRITE) or allowed_on_any(core, ctx, WRITE, TOPIC)
    ):
        return respond(  # KIP-679: WRITE on any topic also allows an idempotent producer
            ctx,
            throttle_time=0,
            error_code=ErrorCode.cluster_authorization_failed,
            producer_id=-1,
            producer_epoch=-1,
        )
    pid = int(getattr(req, "producer_id", -1))
    epoch = int(getattr(req, "producer_epoch", -1))
    if pid >= 0 and 0 <= epoch < _MAX_EPOCH:
        # KIP-360: an idempotent producer bumps its epoch to reset sequences after an error.
        return respond(
            ctx, throttle_time=0, error_code=0, producer_id=pid, producer_epoch=epoch + 1
        )
    new_pid = core.logs.allocate_producer_id()
    return respond(ctx, throttle_time=0, error_code=0, producer_id=new_pid, producer_epoch=0)
