"""The decisions of InitProducerId with a transactional id (Kafka's ``handleInitProducerId``):
is the request well-formed, may this id be (re)initialised now, and which producer id and
epoch come next (an epoch bump, a retried success, a rotation to a new producer id once the
epoch is exhausted, or fenced).
"""

from __future__ import annotations

from collections.abc import Callable

from streamrt.broker.txn.metadata import NO_EPOCH, TransactionMetadata, is_epoch_exhausted
from streamrt.broker.txn.records import TransactionLogValue
from streamrt.broker.txn.state import TxnState
from streamrt.errors import ErrorCode

__all__ = ("init_blocker", "prepare_init", "request_error")

Expected = tuple[int, int] | None  # (producer id, epoch) the client already holds


def request_error(
    txn_id: str, expected_pid: int, expected_epoch: int, timeout_ms: int, max_timeout_ms: int
) -> ErrorCode | None:
    if not txn_id or (expected_pid < 0) != (expected_epoch < 0):
        return ErrorCode.invalid_request
    if not 0 < timeout_ms <= max_timeout_ms:
        return ErrorCode.invalid_transaction_timeout
    return None


def _valid_producer_id(md: TransactionMetadata, pid: int, epoch: int) -> bool:
    """Kafka's ``isValidProducerId``: a fresh id, the current id, or the previous id with an
    exhausted epoch (a retry after a rotation whose answer was lost)."""
    return (
        md.producer_epoch == NO_EPOCH
        or pid == md.producer_id
        or (pid == md.last_producer_id and is_epoch_exhausted(epoch))
    )


def init_blocker(
    md: TransactionMetadata, expected: Expected, fenced: ErrorCode
) -> ErrorCode | None:
    """Why the id cannot be initialised now, or ``None``; an ONGOING transaction is not a
    blocker here: the caller fences and aborts it."""
    if md.pending_state is not None:
        return ErrorCode.concurrent_transactions
    if expected is not None and not _valid_producer_id(md, *expected):
        return fenced
    if md.state is TxnState.ONGOING:
        return None
    if md.state.is_prepare or not (md.state is TxnState.EMPTY or md.state.is_complete):
        return ErrorCode.concurrent_transactions
    return None


def prepare_init(
    md: TransactionMetadata,
    expected: Expected,
    timeout_ms: int,
    now_ms: int,
    allocate_producer_id: Callable[[], int],
) -> TransactionLogValue | None:
    """The value to write for the next producer id/epoch; ``None`` when ``expected`` names an
    epoch that is neither the current nor the last one (fenced)."""
    if md.epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
        return md.prepare_producer_id_rotation(
            allocate_producer_id(), timeout_ms, now_ms, expected is not None
        )
    bumped = md.producer_epoch + 1
    if expected is None:
        epoch, last = bumped, NO_EPOCH
    elif md.producer_epoch == NO_EPOCH or expected[1] == md.producer_epoch:
        epoch, last = bumped, md.producer_epoch
    elif expected[1] == md.last_producer_epoch:
        epoch, last = md.producer_epoch, md.last_producer_epoch  # a retried success
    else:
        return None
    return md.prepare_epoch_bump(epoch, last, timeout_ms, now_ms)
