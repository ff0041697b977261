"""One transactional id's soft state and its transitions (Kafka's ``TransactionMetadata``).

A transition is prepared first (``prepare_*`` returns the full value to persist and sets
``pending_state``, so concurrent requests get CONCURRENT_TRANSACTIONS), then applied with
:meth:`TransactionMetadata.complete_transition` once the value is in ``__transaction_state``,
or dropped with :meth:`abort_transition` if the write failed.
"""

from __future__ import annotations

import dataclasses

from streamrt.broker.txn.records import TopicPartition, TransactionLogValue
from streamrt.broker.txn.state import TxnState, check_transition

__all__ = ("MAX_EPOCH", "NO_EPOCH", "TransactionMetadata", "is_epoch_exhausted")

NO_EPOCH = -1
NO_PRODUCER_ID = -1
MAX_EPOCH = 32767


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps 32767 in reserve so one more fence is always possible."""
    return epoch >= MAX_EPOCH - 1


@dataclasses.dataclass(slots=True)
class TransactionMetadata:
    """Responsibilities: the id's producer id/epochs, state, partitions and timestamps, and
    preparing values for each transition. Answers and errors are the coordinator's job."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = dataclasses.field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_EPOCH
    pending_state: TxnState | None = None
    has_failed_epoch_fence: bool = False

    @classmethod
    def from_value(cls, transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
        return cls(
            transactional_id,
            value.producer_id,
            value.producer_epoch,
            value.timeout_ms,
            value.state,
            set(value.partitions or ()),
            value.start_ms,
            value.last_update_ms,
        )

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def _value(
        self,
        state: TxnState,
        *,
        producer_id: int | None = None,
        epoch: int | None = None,
        timeout_ms: int | None = None,
        partitions: set[TopicPartition] | None = None,
        start_ms: int | None = None,
        now_ms: int,
    ) -> TransactionLogValue:
        """The full value of the target state, after checking the transition table."""
        if self.pending_state not in (None, state, TxnState.PREPARE_EPOCH_FENCE):
            raise AssertionError(f"{self.transactional_id}: a transition is already pending")
        check_transition(self.state if self.pending_state is None else self.pending_state, state)
        parts = self.partitions if partitions is None else partitions
        self.pending_state = state
        return TransactionLogValue(
            producer_id=self.producer_id if producer_id is None else producer_id,
            producer_epoch=self.producer_epoch if epoch is None else epoch,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            state=state,
            partitions=None if state is TxnState.EMPTY else tuple(sorted(parts)),
            last_update_ms=now_ms,
            start_ms=self.start_ms if start_ms is None else start_ms,
        )

    # -- transitions ----------------------------------------------------------------------

    def prepare_epoch_bump(
        self, epoch: int, last_epoch: int, timeout_ms: int, now_ms: int
    ) -> TransactionLogValue:
        """InitProducerId in Empty/Complete*: a new epoch (or a retried one), no partitions."""
        self.last_producer_epoch = last_epoch
        return self._value(
            TxnState.EMPTY,
            epoch=epoch,
            timeout_ms=timeout_ms,
            partitions=set(),
            start_ms=-1,
            now_ms=now_ms,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, recovering: bool
    ) -> TransactionLogValue:
        """The epoch is exhausted: continue under a fresh producer id at epoch 0."""
        self.last_producer_id = self.producer_id
        self.last_producer_epoch = self.producer_epoch if recovering else NO_EPOCH
        return self._value(
            TxnState.EMPTY,
            producer_id=new_producer_id,
            epoch=0,
            timeout_ms=timeout_ms,
            partitions=set(),
            start_ms=-1,
            now_ms=now_ms,
        )

    def prepare_add_partitions(
        self, added: set[TopicPartition], now_ms: int
    ) -> TransactionLogValue:
        """Ongoing with the union; the start time is set by the first Add* of a transaction."""
        starting = self.state is TxnState.EMPTY or self.state.is_complete
        return self._value(
            TxnState.ONGOING,
            partitions=(set() if starting else self.partitions) | added,
            start_ms=now_ms if starting else self.start_ms,
            now_ms=now_ms,
        )

    def prepare_fence(self) -> int:
        """Kafka's ``prepareFenceProducerEpoch``: bump the epoch in memory (once, even if the
        last fence's write failed) so the zombie's requests fail; returns the new epoch."""
        check_transition(self.state, TxnState.PREPARE_EPOCH_FENCE)
        if not self.has_failed_epoch_fence and self.producer_epoch < MAX_EPOCH:
            self.producer_epoch += 1  # 32767 is kept for exactly this last fence
        self.last_producer_epoch = NO_EPOCH
        self.pending_state = TxnState.PREPARE_EPOCH_FENCE
        return self.producer_epoch

    def prepare_end(self, commit: bool, now_ms: int) -> TransactionLogValue:
        """EndTxn (or a fence/timeout abort): the decision, with the same partitions."""
        target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        return self._value(target, now_ms=now_ms)

    def prepare_complete(self, now_ms: int) -> TransactionLogValue:
        """All markers written: Complete*, with an empty partition list."""
        target = (
            TxnState.COMPLETE_COMMIT
            if self.state is TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT
        )
        return self._value(target, partitions=set(), now_ms=now_ms)

    def complete_transition(self, value: TransactionLogValue) -> None:
        """The value is durable: adopt it."""
        self.producer_id = value.producer_id
        self.producer_epoch = value.producer_epoch
        self.timeout_ms = value.timeout_ms
        self.state = value.state
        self.partitions = set(value.partitions or ())
        self.start_ms = value.start_ms
        self.last_update_ms = value.last_update_ms
        self.pending_state = None
        self.has_failed_epoch_fence = False

    def abort_transition(self, *, failed_fence: bool = False) -> None:
        """The write failed: nothing changed except, for a fence, the remembered failure."""
        self.pending_state = None
        if failed_fence:
            self.has_failed_epoch_fence = True
