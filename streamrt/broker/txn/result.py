"""What every transaction-coordinator step returns: records, a reply, markers to write."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from streamrt.broker.txn.records import TopicPartition, TxnRecord
from streamrt.errors import ErrorCode

__all__ = ("EMPTY_RESULT", "TxnMarkers", "TxnResult")


@dataclasses.dataclass(frozen=True, slots=True)
class TxnMarkers:
    """COMMIT/ABORT markers to write into every partition of one transaction (Kafka's
    ``TxnMarkerEntry``). When all are written the runtime calls ``markers_written``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple[TopicPartition, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TxnResult:
    """One step of the state machine.

    The runtime appends ``records`` to ``__transaction_state``, then calls ``on_append`` with
    ``None`` or the mapped error ("append, then apply": the callback completes or drops the
    prepared transition and returns the step's real answer). ``response`` is the reply (``None``
    for timer steps). ``markers`` are written after the reply is sent. ``also`` holds
    independent steps taken in the same event (the timeout scan aborts several transactions).
    """

    records: tuple[TxnRecord, ...] = ()
    response: Any = None
    on_append: Callable[[ErrorCode | None], TxnResult] | None = None
    markers: tuple[TxnMarkers, ...] = ()
    also: tuple[TxnResult, ...] = ()


EMPTY_RESULT = TxnResult()
