"""Transaction states and the one table of allowed transitions (Kafka's ``TransactionState``).

What each state answers (TV1, the protocol all pinned clients speak):

* ``Empty``: a producer id/epoch is assigned, no transaction is open. InitProducerId bumps the
  epoch; AddPartitions/AddOffsets open a transaction (-> Ongoing); EndTxn gets INVALID_TXN_STATE.
* ``Ongoing``: partitions are being added. EndTxn writes PrepareCommit/PrepareAbort;
  InitProducerId fences it (epoch + 1, server-side abort) and answers CONCURRENT_TRANSACTIONS;
  the timeout scan aborts it the same way.
* ``PrepareCommit`` / ``PrepareAbort``: the decision is durable and markers are being written.
  Every request gets CONCURRENT_TRANSACTIONS, except a mismatching EndTxn (INVALID_TXN_STATE).
* ``CompleteCommit`` / ``CompleteAbort``: every marker is written. A retried EndTxn of the same
  outcome gets NONE, the other INVALID_TXN_STATE; Add* opens the next transaction.
* ``Dead``: an expired id (tombstoned, never written as a value).
* ``PrepareEpochFence``: memory only, while a fence's PrepareAbort is being written.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = ("VALID_PREVIOUS_STATES", "IllegalStateTransition", "TxnState", "check_transition")


class TxnState(enum.Enum):
    """Values are Kafka's state ids (the ``TransactionStatus`` byte of ``__transaction_state``)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def wire_name(self) -> str:
        """The name DescribeTransactions/ListTransactions show (``Ongoing``, ``PrepareCommit``)."""
        return _NAMES[self]

    @classmethod
    def from_wire_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_expirable(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


_NAMES: Mapping[TxnState, str] = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME: Mapping[str, TxnState] = {v: k for k, v in _NAMES.items()}

_COMPLETE = frozenset({TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})

VALID_PREVIOUS_STATES: Mapping[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY}) | _COMPLETE,
    TxnState.ONGOING: frozenset({TxnState.EMPTY, TxnState.ONGOING}) | _COMPLETE,
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY}) | _COMPLETE,
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


class IllegalStateTransition(AssertionError):
    """A coordinator bug: a transition the table does not allow."""


def check_transition(current: TxnState, target: TxnState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(f"{current.wire_name} -> {target.wire_name} is not allowed")
