"""Transactional producer internals: TxnOffsetCommit v3 with the consumer's group metadata
(KIP-447) instead of aiokafka's v0, and recognising a fenced producer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiokafka.errors as Errors
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.client import CoordinationType
from aiokafka.producer.sender import TxnOffsetCommitHandler
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.transaction import TxnOffsetCommitRequest_v0
from aiokafka.protocol.types import (
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

from streamrt.runtime.engine.kafka_adapter.membership import (
    FencedInstanceIdError,
    group_coordinator,
)

__all__ = (
    "GroupMetadata",
    "group_metadata",
    "install_group_metadata_offsets",
    "is_producer_fenced",
)


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """What the group coordinator checks on a TxnOffsetCommit v3 (the Java consumer's
    ``groupMetadata()``): a stale generation, an unknown member or a replaced static
    instance is refused."""

    generation_id: int
    member_id: str
    group_instance_id: str | None


def group_metadata(consumer: AIOKafkaConsumer | None) -> GroupMetadata:
    """The consumer's current group metadata (generation -1 and "" before it joined)."""
    coordinator = group_coordinator(consumer)
    if coordinator is None:
        return GroupMetadata(-1, "", None)
    return GroupMetadata(
        int(coordinator.generation),
        str(coordinator.member_id or ""),
        coordinator._group_instance_id,
    )


class TxnOffsetCommitResponse_v3(Response):
    API_KEY = 28
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                (
                    "partitions",
                    CompactArray(
                        ("partition_index", Int32),
                        ("error_code", Int16),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class TxnOffsetCommitRequest_v3(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 28
    API_VERSION = 3
    RESPONSE_TYPE = TxnOffsetCommitResponse_v3
    SCHEMA = Schema(
        ("transactional_id", CompactString("utf-8")),
        ("group_id", CompactString("utf-8")),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("generation_id", Int32),
        ("member_id", CompactString("utf-8")),
        ("group_instance_id", CompactString("utf-8")),
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                (
                    "partitions",
                    CompactArray(
                        ("partition_index", Int32),
                        ("committed_offset", Int64),
                        ("committed_leader_epoch", Int32),
                        ("committed_metadata", CompactString("utf-8")),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class GroupMetadataTxnOffsetCommitRequest(
    Request[TxnOffsetCommitRequest_v0 | TxnOffsetCommitRequest_v3]
):
    """TxnOffsetCommit negotiated up to v3; v3 carries the group metadata."""

    API_KEY = 28

    def __init__(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: list[tuple[str, list[tuple[int, int, str]]]],
        metadata: GroupMetadata,
    ) -> None:
        self._ids = (transactional_id, group_id, producer_id, producer_epoch)
        self._offsets = offsets
        self._metadata = metadata

    def build(self, request_struct_class: type[Any]) -> Any:
        if request_struct_class.API_VERSION < 3:
            return request_struct_class(*self._ids, self._offsets)
        m = self._metadata
        topics: list[
            tuple[str, list[tuple[int, int, int, str, dict[int, bytes]]], dict[int, bytes]]
        ] = [
            (topic, [(p, off, -1, meta, {}) for p, off, meta in parts], {})
            for topic, parts in self._offsets
        ]
        return request_struct_class(
            *self._ids, m.generation_id, m.member_id, m.group_instance_id, topics, {}
        )


#: TxnOffsetCommit v3 answers that mean "this member may not commit for the group": the
#: transaction is aborted (abortable error), the producer itself stays usable.
_GROUP_FENCING_CODES = (
    Errors.IllegalGenerationError.errno,
    Errors.UnknownMemberIdError.errno,
    FencedInstanceIdError.errno,
)


class _V0Shape:
    """A v3 response seen as aiokafka's v0 handler expects it (``errors`` pairs)."""

    def __init__(self, response: Any) -> None:
        self.errors = [
            (topic, [(partition, code) for partition, code, _tags in parts])
            for topic, parts, _tags in response.topics
        ]


class _GroupMetadataTxnOffsetCommitHandler(TxnOffsetCommitHandler):  # type: ignore[misc]
    def __init__(self, sender: Any, offsets: Any, group_id: str, metadata: GroupMetadata):
        super().__init__(sender, offsets, group_id)
        self._metadata = metadata

    def create_request(self) -> GroupMetadataTxnOffsetCommitRequest:
        txn_manager = self._sender._txn_manager
        by_topic: dict[str, list[tuple[int, int, str]]] = {}
        for tp, offset in sorted(self._offsets.items()):
            by_topic.setdefault(tp.topic, []).append((tp.partition, offset.offset, offset.metadata))
        return GroupMetadataTxnOffsetCommitRequest(
            txn_manager.transactional_id,
            self._group_id,
            txn_manager.producer_id,
            txn_manager.producer_epoch,
            list(by_topic.items()),
            self._metadata,
        )

    def handle_response(self, resp: Any) -> float | None:
        if resp.API_VERSION < 3:
            return TxnOffsetCommitHandler.handle_response(self, resp)  # type: ignore[no-any-return]
        shaped = _V0Shape(resp)
        for _topic, parts in shaped.errors:
            for _partition, code in parts:
                if code in _GROUP_FENCING_CODES:
                    m = self._metadata
                    exc = Errors.for_code(code)(
                        f"TxnOffsetCommit refused for group {self._group_id} (generation "
                        f"{m.generation_id}, member {m.member_id!r}, instance "
                        f"{m.group_instance_id!r})"
                    )
                    self._sender._txn_manager.error_transaction(exc)
                    return None
        return TxnOffsetCommitHandler.handle_response(self, shaped)  # type: ignore[no-any-return]


def install_group_metadata_offsets(
    producer: AIOKafkaProducer, metadata: Callable[[], GroupMetadata]
) -> None:
    """Make ``producer.send_offsets_to_transaction`` send TxnOffsetCommit v3 with
    ``metadata()`` (taken when the request is built, so a rejoin in between is seen).

    Call before ``producer.start()``; everything else about the request (coordinator lookup,
    retries, the ``offset_committed`` bookkeeping) is aiokafka's own.
    """
    sender = producer._sender

    async def do_txn_offset_commit(offsets: Any, group_id: str) -> None:
        if not offsets:
            return
        try:
            node_id = await sender._find_coordinator(CoordinationType.GROUP, group_id)
        except Errors.GroupAuthorizationFailedError as exc:
            sender._txn_manager.error_transaction(exc)
            return
        handler = _GroupMetadataTxnOffsetCommitHandler(sender, offsets, group_id, metadata())
        await handler.do(node_id)

    sender._do_txn_offset_commit = do_txn_offset_commit


def is_producer_fenced(exc: BaseException) -> bool:
    """True if a newer producer with our transactional.id exists (or the coordinator aborted
    our transaction on its timeout): the transaction is lost and the producer unusable."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, Errors.ProducerFenced | Errors.InvalidProducerEpoch):
            return True
        seen = seen.__cause__
    return False
