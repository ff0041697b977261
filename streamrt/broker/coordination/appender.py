"""Appending a coordinator step's records to its internal topic, and Kafka's mapping of a
failed append to the error a client sees.

Records are grouped by the partition their id hashes to; each partition gets one batch,
written with the broker's durability (``streamrt.log.fsync``), as Kafka appends with acks=-1.
A refused batch or a storage failure becomes an :class:`ErrorCode` the coordinator maps with
its own table (Kafka: ``appendGroupMetadataErrorToResponseError`` and the transaction state
manager's mapping).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from streamrt.broker.coordination.log_writer import CoordinatorLogs
from streamrt.broker.coordination.partitioning import partition_for
from streamrt.broker.log.codec import NewRecord, build_batch
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields

__all__ = (
    "GROUP_APPEND_ERRORS",
    "TXN_APPEND_ERRORS",
    "CoordinatorRecord",
    "append_records",
    "map_group_append_error",
    "map_txn_append_error",
)

logger = logging.getLogger(__name__)

_UNAVAILABLE = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
}
#: Kafka's ``appendGroupMetadataErrorToResponseError``: other codes pass through.
GROUP_APPEND_ERRORS: Mapping[ErrorCode, ErrorCode] = {
    **_UNAVAILABLE,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
    ErrorCode.invalid_fetch_size: ErrorCode.unknown_server_error,
}
#: The transaction state manager's mapping: other codes are UNKNOWN_SERVER_ERROR.
TXN_APPEND_ERRORS: Mapping[ErrorCode, ErrorCode] = _UNAVAILABLE


def map_group_append_error(code: ErrorCode) -> ErrorCode:
    return GROUP_APPEND_ERRORS.get(code, code)


def map_txn_append_error(code: ErrorCode) -> ErrorCode:
    return TXN_APPEND_ERRORS.get(code, ErrorCode.unknown_server_error)


class CoordinatorRecord(Protocol):
    """A record of a coordinator step: its bytes, and the id that picks its partition."""

    @property
    def key(self) -> bytes: ...
    @property
    def value(self) -> bytes | None: ...


_R = TypeVar("_R", bound=CoordinatorRecord)


def append_records(
    logs: CoordinatorLogs,
    topic: str,
    partitions: int,
    records: Sequence[_R],
    owner: Callable[[_R], str],
    now_ms: int,
    *,
    producer: tuple[int, int] | None = None,
) -> ErrorCode | None:
    """One batch per partition of ``topic`` (``owner`` names each record's id); ``None`` once
    every batch is in the log, else the append's error code.

    With ``producer`` (TxnOffsetCommit) the batch is that producer's transactional batch,
    appended with the coordinator origin: the log checks the epoch, not sequences.
    """
    by_partition: dict[int, list[_R]] = {}
    for record in records:
        by_partition.setdefault(partition_for(owner(record), partitions), []).append(record)
    pid, epoch = producer if producer is not None else (-1, -1)
    try:
        for partition, batch in by_partition.items():
            buf = build_batch(
                (NewRecord(i, now_ms, r.key, r.value) for i, r in enumerate(batch)),
                transactional=producer is not None,
                producer_id=pid,
                producer_epoch=epoch,
            )
            logs.log(topic, partition).append(bytes(buf), now_ms, coordinator=producer is not None)
    except KafkaError as exc:
        logger.warning(f"{topic} append failed", extra=fields(error=exc.code.name))
        return exc.code
    except OSError as exc:
        logger.error(f"{topic} append failed", extra=fields(error=str(exc)))
        return ErrorCode.kafka_storage_error
    return None
