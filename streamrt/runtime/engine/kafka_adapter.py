"""Every aiokafka internal the runtime touches, in one place, pinned to aiokafka 0.14.0.

The runtime needs four things aiokafka does not offer publicly: the consumer's member id and
group generation (for metadata and events), a static member's heartbeat that reports
FENCED_INSTANCE_ID (82), and a rejoin on demand (probing rebalances). :data:`PINNED_INTERNALS`
lists every private name used here and ``tests/runtime/test_kafka_adapter.py`` checks them
against the installed aiokafka, so an upgrade that moves them fails loudly in the suite instead
of silently at run time.

What aiokafka 0.14 does by itself (read in ``aiokafka/consumer/group_coordinator.py``):

* it has no error class for code 82, so ``for_code(82)`` is ``UnknownError`` and the code is
  lost in the message;
* it sends Heartbeat v0/v1, which carry no ``group_instance_id``. When another process takes
  over our instance id, the coordinator can then only answer UNKNOWN_MEMBER_ID; aiokafka
  resets and rejoins with the same instance id, which replaces the other process, which does
  the same: the two take the id from each other for ever and nobody is told;
* it does skip LeaveGroup when ``group_instance_id`` is set (``_maybe_leave_group``), which
  is what static membership needs, so that part is left as it is.

So this module registers :class:`FencedInstanceIdError` for code 82 and gives a consumer a
heartbeat that sends Heartbeat v3 with the ``group_instance_id`` (Kafka 2.3+), so the
coordinator answers 82 and the runtime can stop with a message naming the id.

Exactly-once (KIP-447) needs one more piece: aiokafka's ``send_offsets_to_transaction`` sends
TxnOffsetCommit **v0**, which carries no group metadata, so the group coordinator cannot tell a
stale incarnation of a static member (or a member fenced by a rebalance) from the current one
and accepts its offsets. :func:`install_group_metadata_offsets` makes one producer send
TxnOffsetCommit **v3** with the consumer's generation, member id and ``group.instance.id``,
read from the consumer at the moment the request is built; the coordinator's answers 22, 25
and 82 abort the transaction (the offsets never land) instead of killing the producer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiokafka.errors as Errors
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.client import CoordinationType
from aiokafka.producer.sender import TxnOffsetCommitHandler
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.group import (
    HeartbeatRequest_v0,
    HeartbeatRequest_v1,
    HeartbeatResponse_v1,
)
from aiokafka.protocol.transaction import TxnOffsetCommitRequest_v0
from aiokafka.protocol.types import (
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
    TaggedFields,
)

__all__ = (
    "AIOKAFKA_VERSION",
    "PINNED_INTERNALS",
    "FencedInstanceIdError",
    "GroupMetadata",
    "check_static_membership",
    "find_coordinator",
    "generation",
    "group_metadata",
    "install_group_metadata_offsets",
    "install_static_heartbeat",
    "is_fenced",
    "is_producer_fenced",
    "member_id",
    "request_rejoin",
)

AIOKAFKA_VERSION = "0.14.0"

# (class path, attribute, what it is) for every private or undocumented name used below.
PINNED_INTERNALS: tuple[tuple[str, str, str], ...] = (
    ("aiokafka.consumer.consumer.AIOKafkaConsumer", "_coordinator", "instance attribute"),
    ("aiokafka.consumer.group_coordinator.GroupCoordinator", "generation", "instance attribute"),
    ("aiokafka.consumer.group_coordinator.GroupCoordinator", "member_id", "instance attribute"),
    ("aiokafka.consumer.group_coordinator.GroupCoordinator", "group_id", "instance attribute"),
    (
        "aiokafka.consumer.group_coordinator.GroupCoordinator",
        "_group_instance_id",
        "instance attribute",
    ),
    ("aiokafka.consumer.group_coordinator.GroupCoordinator", "_do_heartbeat", "method(self)"),
    ("aiokafka.consumer.group_coordinator.GroupCoordinator", "_send_req", "method(self, request)"),
    ("aiokafka.consumer.group_coordinator.GroupCoordinator", "request_rejoin", "method(self)"),
    (
        "aiokafka.consumer.group_coordinator.GroupCoordinator",
        "ensure_coordinator_known",
        "method(self)",
    ),
    ("aiokafka.errors", "kafka_errors", "module dict: error code -> class"),
    # exactly-once: TxnOffsetCommit v3 with group metadata (install_group_metadata_offsets)
    ("aiokafka.producer.producer.AIOKafkaProducer", "_sender", "instance attribute"),
    ("aiokafka.producer.sender.Sender", "_txn_manager", "instance attribute"),
    (
        "aiokafka.producer.sender.Sender",
        "_do_txn_offset_commit",
        "method(self, offsets, group_id)",
    ),
    (
        "aiokafka.producer.sender.Sender",
        "_find_coordinator",
        "method(self, coordinator_type, coordinator_key)",
    ),
    (
        "aiokafka.producer.sender.TxnOffsetCommitHandler",
        "__init__",
        "method(self, sender, offsets, group_id)",
    ),
    ("aiokafka.producer.sender.TxnOffsetCommitHandler", "_offsets", "instance attribute"),
    ("aiokafka.producer.sender.TxnOffsetCommitHandler", "_group_id", "instance attribute"),
    ("aiokafka.producer.sender.TxnOffsetCommitHandler", "create_request", "method(self)"),
    ("aiokafka.producer.sender.TxnOffsetCommitHandler", "handle_response", "method(self, resp)"),
    ("aiokafka.producer.sender.BaseHandler", "do", "method(self, node_id)"),
    (
        "aiokafka.producer.transaction_manager.TransactionManager",
        "error_transaction",
        "method(self, exc)",
    ),
)

logger = logging.getLogger(__name__)


class FencedInstanceIdError(Errors.BrokerResponseError):
    errno = 82
    message = "FENCED_INSTANCE_ID"
    description = "Another consumer with the same group.instance.id has joined the group."


Errors.kafka_errors.setdefault(82, FencedInstanceIdError)


def is_fenced(exc: BaseException) -> bool:
    """True for error 82 however aiokafka wrapped it (raised, or ``repr`` in a message)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, FencedInstanceIdError) or "FencedInstanceIdError" in str(seen):
            return True
        seen = seen.__cause__
    return False


class HeartbeatResponse_v3(Response):
    API_KEY = 12
    API_VERSION = 3
    SCHEMA = HeartbeatResponse_v1.SCHEMA


class HeartbeatRequest_v3(RequestStruct):
    API_KEY = 12
    API_VERSION = 3
    RESPONSE_TYPE = HeartbeatResponse_v3
    SCHEMA = Schema(
        ("group", String("utf-8")),
        ("generation_id", Int32),
        ("member_id", String("utf-8")),
        ("group_instance_id", String("utf-8")),
    )


class StaticHeartbeatRequest(
    Request[HeartbeatRequest_v0 | HeartbeatRequest_v1 | HeartbeatRequest_v3]
):
    """Heartbeat negotiated up to v3; v3 carries ``group_instance_id``."""

    API_KEY = 12

    def __init__(
        self, group: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> None:
        self._args = (group, generation_id, member_id)
        self._group_instance_id = group_instance_id

    def build(self, request_struct_class: type[Any]) -> Any:
        if request_struct_class.API_VERSION >= 3:
            return request_struct_class(*self._args, self._group_instance_id)
        return request_struct_class(*self._args)


def _coordinator(consumer: AIOKafkaConsumer | None) -> Any:
    """The consumer's group coordinator; None before ``start()`` or without a group."""
    return getattr(consumer, "_coordinator", None)


def member_id(consumer: AIOKafkaConsumer | None) -> str | None:
    """The member id the coordinator assigned to this consumer, once it has joined."""
    member = getattr(_coordinator(consumer), "member_id", None)
    return str(member) if member else None


def generation(consumer: AIOKafkaConsumer | None) -> int | None:
    """The group generation this consumer last joined (-1 before the first join)."""
    value = getattr(_coordinator(consumer), "generation", None)
    return None if value is None else int(value)


def request_rejoin(consumer: AIOKafkaConsumer) -> bool:
    """Make the consumer rejoin its group at its next poll (Kafka's ``enforceRebalance``).

    aiokafka has no public call for it; its coordinator's ``request_rejoin`` wakes the
    coordination task, which sends JoinGroup with fresh subscription metadata. A leader's
    rejoin always rebalances a stable group (KIP-345 coordinator), which is what a probing
    rebalance needs. Returns False if the consumer has no coordinator yet.
    """
    coordinator = _coordinator(consumer)
    if coordinator is None:
        return False
    coordinator.request_rejoin()
    return True


async def find_coordinator(consumer: AIOKafkaConsumer) -> bool:
    """Look up and connect to the group coordinator now, before subscribing.

    aiokafka does it only once a subscription wakes its coordination task; a hand-off
    successor does it while the previous process still runs, so its JoinGroup goes out the
    moment it subscribes. Returns False if the consumer has no coordinator (no group).
    """
    coordinator = _coordinator(consumer)
    if coordinator is None:
        return False
    await coordinator.ensure_coordinator_known()
    return True


def install_static_heartbeat(consumer: AIOKafkaConsumer) -> None:
    """Replace the started consumer's heartbeat with one that reports fencing.

    Only the request changes; every other answer is handed to aiokafka's own handling.
    """
    coordinator = _coordinator(consumer)
    if coordinator is None or coordinator._group_instance_id is None:
        return
    original = coordinator._do_heartbeat

    async def do_heartbeat() -> bool:
        request = StaticHeartbeatRequest(
            coordinator.group_id,
            coordinator.generation,
            coordinator.member_id,
            coordinator._group_instance_id,
        )
        try:
            resp = await coordinator._send_req(request)
        except Errors.KafkaError as err:
            logger.error("heartbeat request failed, will retry: %s", err)
            return False
        if resp.error_code == FencedInstanceIdError.errno:
            raise FencedInstanceIdError(
                f"group.instance.id {coordinator._group_instance_id} is used by another member"
            )
        if resp.error_code == 0:
            return True
        # Anything else: let aiokafka's heartbeat send again and handle the answer its way.
        return bool(await original())

    coordinator._do_heartbeat = do_heartbeat


# -- exactly-once: TxnOffsetCommit v3 with the consumer's group metadata (KIP-447) ----------


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
    coordinator = _coordinator(consumer)
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


async def check_static_membership(consumer: AIOKafkaConsumer) -> None:
    """Ask the group coordinator whether this static member is still current; raises
    :class:`FencedInstanceIdError` if another process took its ``group.instance.id``.

    A thread whose transactional producer was fenced calls this before re-creating the
    producer: re-creating it would in turn fence the newer incarnation.
    """
    coordinator = _coordinator(consumer)
    if coordinator is None or coordinator._group_instance_id is None:
        return
    request = StaticHeartbeatRequest(
        coordinator.group_id,
        coordinator.generation,
        coordinator.member_id,
        coordinator._group_instance_id,
    )
    try:
        resp = await coordinator._send_req(request)
    except Errors.KafkaError as err:
        logger.warning("membership check failed: %s", err)
        return
    if resp.error_code == FencedInstanceIdError.errno:
        raise FencedInstanceIdError(
            f"group.instance.id {coordinator._group_instance_id} is used by another member"
        )


def check_pinned_internals() -> list[str]:
    """What no longer matches :data:`PINNED_INTERNALS` in the installed aiokafka (empty: all
    good). Instance attributes are looked for as assignments in ``__init__``'s source."""
    import importlib
    import inspect

    import aiokafka

    problems: list[str] = []
    if aiokafka.__version__ != AIOKAFKA_VERSION:
        problems.append(
            f"aiokafka {aiokafka.__version__} is installed, the runtime's adapter is pinned to "
            f"{AIOKAFKA_VERSION}: re-check streamrt/runtime/engine/kafka_adapter.py and re-pin"
        )
    for path, attr, kind in PINNED_INTERNALS:
        module_name, _, class_name = path.rpartition(".")
        try:
            owner: Any = importlib.import_module(path)
        except ImportError:
            owner = getattr(importlib.import_module(module_name), class_name, None)
        if owner is None:
            problems.append(f"{path} no longer exists (needed for {attr})")
            continue
        where = f"{path}.{attr}"
        if kind == "instance attribute":
            source = inspect.getsource(owner.__init__)
            if f"self.{attr} =" not in source:
                problems.append(f"{where}: no longer set in __init__")
        elif kind.startswith("method("):
            method = getattr(owner, attr, None)
            wanted = kind[len("method") :]
            if method is None or str(inspect.signature(method)) != wanted:
                got = None if method is None else inspect.signature(method)
                problems.append(f"{where}: expected signature {wanted}, found {got}")
        elif not hasattr(owner, attr):
            problems.append(f"{where}: missing ({kind})")
    return problems


async def assign_at(
    consumer: AIOKafkaConsumer, positions: Mapping[TopicPartition, int | None]
) -> None:
    """Assign exactly ``positions`` and seek each partition (``None``: the log start) with no
    await between the assignment and the seeks.

    aiokafka 0.14's fetcher resets a freshly assigned partition that has no position with the
    consumer's ``auto_offset_reset`` as soon as it gets control, and when an explicit
    ``seek_to_beginning`` arrives while that reset's ListOffsets is in flight, it applies the
    in-flight answer (it checks only that *a* reset is pending). Seeking partitions one by one
    with an ``await seek_to_beginning`` in between therefore let a later partition land at the
    changelog *end* (``latest`` is aiokafka's default): a restore then "completed" with nothing
    read and the store came up empty. Seen on a 3-broker Apache Kafka cluster, where the
    partitions' leaders differ and the two ListOffsets race. Public API only.
    """
    consumer.assign(list(positions))
    from_start = []
    for tp, position in positions.items():
        if position is None:
            from_start.append(tp)
        else:
            consumer.seek(tp, position)
    if from_start:
        await consumer.seek_to_beginning(*from_start)
