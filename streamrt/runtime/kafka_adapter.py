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
"""

from __future__ import annotations

import logging
from typing import Any

import aiokafka.errors as Errors
from aiokafka import AIOKafkaConsumer
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.group import (
    HeartbeatRequest_v0,
    HeartbeatRequest_v1,
    HeartbeatResponse_v1,
)
from aiokafka.protocol.types import Int32, Schema, String

__all__ = (
    "AIOKAFKA_VERSION",
    "PINNED_INTERNALS",
    "FencedInstanceIdError",
    "generation",
    "install_static_heartbeat",
    "is_fenced",
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
    ("aiokafka.errors", "kafka_errors", "module dict: error code -> class"),
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
            f"{AIOKAFKA_VERSION}: re-check streamrt/runtime/kafka_adapter.py and re-pin"
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
