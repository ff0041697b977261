"""The aiokafka version and every private or undocumented aiokafka name the adapter uses.

``tests/runtime/test_kafka_adapter.py`` runs :func:`check_pinned_internals` against the
installed aiokafka, so an upgrade that moves one fails loudly in the suite.
"""

from __future__ import annotations

from typing import Any

__all__ = ("AIOKAFKA_VERSION", "PINNED_INTERNALS", "check_pinned_internals")

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
        "need_rejoin",
        "method(self, subscription)",
    ),
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
            f"{AIOKAFKA_VERSION}: re-check streamrt/runtime/engine/kafka_adapter/ and re-pin"
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
