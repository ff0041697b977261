"""The transaction coordinator as a pure state machine (Kafka's ``TransactionCoordinator``).

Handlers take a :class:`RequestContext` and a kio request and return a :class:`TxnResult`; a
state change is a prepared value (records) plus an ``on_append`` callback that applies it once
it is in ``__transaction_state`` and returns the answer. No I/O and no wall clock: time comes
from the injected ``Clock``, the abort scan from the injected ``Timer``, producer ids from an
injected allocator. The runtime (``service.py``) appends, replies, then writes the markers.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from streamrt.broker.txn import admin
from streamrt.broker.txn.init_producer import init_blocker, prepare_init, request_error
from streamrt.broker.txn.metadata import NO_EPOCH, TransactionMetadata
from streamrt.broker.txn.records import (
    TopicPartition,
    TransactionLogValue,
    TxnRecord,
    decode_key,
    decode_value,
    txn_record,
    txn_tombstone,
)
from streamrt.broker.txn.result import TxnMarkers, TxnResult
from streamrt.broker.txn.state import TxnState
from streamrt.clock import Clock
from streamrt.errors import ErrorCode
from streamrt.logs import fields
from streamrt.wire.codec import build, codec_for, ms
from streamrt.wire.context import RequestContext

__all__ = ("TransactionCoordinator", "TxnConfig")

logger = logging.getLogger(__name__)

ABORT_SCAN_KEY = "txn-abort-timed-out"
EXPIRE_SCAN_KEY = "txn-expire-ids"


class Timer(Protocol):
    def schedule(self, key: str, delay_ms: int, op: Callable[[], Any]) -> None: ...

    def cancel(self, key: str) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class TxnConfig:
    """The coordinator's settings, under Kafka's broker config names."""

    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    abort_scan_interval_ms: int = 10_000  # ...abort.timed.out.transaction.cleanup.interval.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    id_scan_interval_ms: int = 3_600_000  # ...remove.expired.transaction.cleanup.interval.ms
    coordinator_epoch: int = 0  # one node, never a new coordinator: a constant

    @classmethod
    def from_broker(cls, config: Any) -> TxnConfig:
        return cls(
            max_timeout_ms=int(config["transaction.max.timeout.ms"]),
            abort_scan_interval_ms=int(
                config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
            ),
            id_expiration_ms=int(config["transactional.id.expiration.ms"]),
            id_scan_interval_ms=int(
                config["transaction.remove.expired.transaction.cleanup.interval.ms"]
            ),
        )


def _response(ctx: RequestContext, **values: Any) -> Any:
    return build(codec_for(ctx.api_key, ctx.api_version).response_cls, throttle_time=0, **values)


def _fenced(ctx: RequestContext, since_version: int) -> ErrorCode:
    """PRODUCER_FENCED (KIP-588) only to versions that know it; INVALID_PRODUCER_EPOCH before."""
    if ctx.api_version >= since_version:
        return ErrorCode.producer_fenced
    return ErrorCode.invalid_producer_epoch


class TransactionCoordinator:
    """Responsibilities: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
    Describe/ListTransactions, produce-time verification (KIP-890 part 1), the timeout abort
    scan, id expiry, ``replay`` of ``__transaction_state`` and resuming decided transactions
    after a load (``on_loaded``)."""

    def __init__(
        self,
        config: TxnConfig,
        clock: Clock,
        timer: Timer,
        allocate_producer_id: Callable[[], int],
        partition_exists: Callable[[str, int], bool] = lambda topic, partition: True,
        offsets_partition: Callable[[str], TopicPartition] = lambda group: (
            "__consumer_offsets",
            0,
        ),
    ) -> None:
        self.config = config
        self.clock = clock
        self.timer = timer
        self.allocate_producer_id = allocate_producer_id
        self.partition_exists = partition_exists
        self.offsets_partition = offsets_partition
        self.transactions: dict[str, TransactionMetadata] = {}

    # -- plumbing -----------------------------------------------------------------------------

    def _write(
        self,
        md: TransactionMetadata,
        value: TransactionLogValue,
        then: Callable[[ErrorCode | None], TxnResult],
        *,
        fence: bool = False,
    ) -> TxnResult:
        """Persist ``value``; on success adopt it, on failure drop the pending transition;
        then ``then(error)`` builds the answer."""

        def on_append(error: ErrorCode | None) -> TxnResult:
            if self.transactions.get(md.transactional_id) is not md:
                return then(ErrorCode.not_coordinator)
            if error is None:
                md.complete_transition(value)
            else:
                md.abort_transition(failed_fence=fence)
                logger.warning(
                    "__transaction_state append failed",
                    extra=fields(transactional_id=md.transactional_id, error=error.name),
                )
            return then(error)

        return TxnResult(records=(txn_record(md.transactional_id, value),), on_append=on_append)

    def _markers(self, md: TransactionMetadata) -> TxnMarkers:
        return TxnMarkers(
            md.transactional_id,
            md.producer_id,
            md.producer_epoch,
            md.state is TxnState.PREPARE_COMMIT,
            tuple(sorted(md.partitions)),
        )

    def _end(self, md: TransactionMetadata, commit: bool, answer: Any, fence: bool) -> TxnResult:
        """Write Prepare*, then answer and send markers (Kafka's ``endTransaction`` tail)."""
        value = md.prepare_end(commit, self.clock.now_ms())

        def then(error: ErrorCode | None) -> TxnResult:
            if error is not None:
                return TxnResult(response=answer(error))
            return TxnResult(response=answer(ErrorCode.none), markers=(self._markers(md),))

        return self._write(md, value, then, fence=fence)

    # -- InitProducerId -----------------------------------------------------------------------

    def init_producer_id(self, ctx: RequestContext, request: Any) -> TxnResult:
        """Kafka's ``handleInitProducerId`` for a non-null transactional id."""
        txn_id: str = request.transactional_id
        timeout_ms = ms(request.transaction_timeout)
        expected_pid = int(getattr(request, "producer_id", -1))
        expected_epoch = int(getattr(request, "producer_epoch", -1))

        def answer(code: ErrorCode, pid: int = -1, epoch: int = -1) -> Any:
            return _response(ctx, error_code=code, producer_id=pid, producer_epoch=epoch)

        max_ms = self.config.max_timeout_ms
        code = request_error(txn_id, expected_pid, expected_epoch, timeout_ms, max_ms)
        if code is not None:
            return TxnResult(response=answer(code))
        md = self.transactions.get(txn_id)
        if md is None:
            md = TransactionMetadata(txn_id, self.allocate_producer_id(), NO_EPOCH, timeout_ms)
            self.transactions[txn_id] = md
        expected = (expected_pid, expected_epoch) if expected_pid >= 0 else None
        code = init_blocker(md, expected, _fenced(ctx, 4))
        if code is not None:
            return TxnResult(response=answer(code))
        if md.state is TxnState.ONGOING:
            return self._fence_and_abort(md, lambda code: answer(ErrorCode.concurrent_transactions))
        now = self.clock.now_ms()
        value = prepare_init(md, expected, timeout_ms, now, self.allocate_producer_id)
        if value is None:
            return TxnResult(response=answer(_fenced(ctx, 4)))

        def then(error: ErrorCode | None) -> TxnResult:
            if error is not None:
                return TxnResult(response=answer(error))
            logger.info(
                "producer initialised",
                extra=fields(transactional_id=txn_id, pid=md.producer_id, epoch=md.producer_epoch),
            )
            return TxnResult(response=answer(ErrorCode.none, md.producer_id, md.producer_epoch))

        return self._write(md, value, then)

    def _fence_and_abort(
        self, md: TransactionMetadata, answer: Callable[[ErrorCode], Any]
    ) -> TxnResult:
        """Fence the open transaction's producer (epoch + 1) and abort it server-side."""
        epoch = md.prepare_fence()
        logger.info(
            "fencing producer and aborting its transaction",
            extra=fields(transactional_id=md.transactional_id, epoch=epoch),
        )
        return self._end(md, False, answer, fence=True)

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------

    def _check_producer(
        self, ctx: RequestContext, txn_id: str, pid: int, epoch: int
    ) -> tuple[TransactionMetadata | None, ErrorCode]:
        """The checks every Add*/EndTxn starts with (INVALID_REQUEST, mapping, fencing)."""
        if not txn_id:
            return None, ErrorCode.invalid_request
        md = self.transactions.get(txn_id)
        if md is None or md.state is TxnState.DEAD or md.producer_id != pid:
            return None, ErrorCode.invalid_producer_id_mapping
        if md.producer_epoch != epoch:
            return None, _fenced(ctx, 2)
        return md, ErrorCode.none

    def _add(
        self,
        ctx: RequestContext,
        txn_id: str,
        pid: int,
        epoch: int,
        partitions: set[TopicPartition],
        answer: Callable[[ErrorCode], Any],
    ) -> TxnResult:
        """Kafka's ``handleAddPartitionsToTransaction`` (client path, v0-3)."""
        md, code = self._check_producer(ctx, txn_id, pid, epoch)
        if md is None:
            return TxnResult(response=answer(code))
        if md.pending_state is not None or md.state.is_prepare:
            return TxnResult(response=answer(ErrorCode.concurrent_transactions))
        if md.state is TxnState.ONGOING and partitions <= md.partitions:
            return TxnResult(response=answer(ErrorCode.none))
        value = md.prepare_add_partitions(partitions, self.clock.now_ms())
        return self._write(
            md, value, lambda error: TxnResult(response=answer(error or ErrorCode.none))
        )

    def add_partitions_to_txn(self, ctx: RequestContext, request: Any) -> TxnResult:
        topics = request.v3_and_below_topics
        wanted = {(t.name, int(p)) for t in topics for p in t.partitions}
        missing = {tp for tp in wanted if not self.partition_exists(*tp)}

        def answer(code: ErrorCode) -> Any:
            def code_of(tp: TopicPartition) -> ErrorCode:
                if not missing:
                    return code
                if tp in missing:
                    return ErrorCode.unknown_topic_or_partition
                return ErrorCode.operation_not_attempted

            return _response(
                ctx,
                results_by_topic_v3_and_below=[
                    {
                        "name": t.name,
                        "results_by_partition": [
                            {"partition_index": p, "partition_error_code": code_of((t.name, p))}
                            for p in t.partitions
                        ],
                    }
                    for t in topics
                ],
            )

        if missing:
            return TxnResult(response=answer(ErrorCode.unknown_topic_or_partition))
        return self._add(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            wanted,
            answer,
        )

    def add_offsets_to_txn(self, ctx: RequestContext, request: Any) -> TxnResult:
        """The group's ``__consumer_offsets`` partition joins the transaction."""

        def answer(code: ErrorCode) -> Any:
            return _response(ctx, error_code=code)

        if not request.group_id:
            return TxnResult(response=answer(ErrorCode.invalid_group_id))
        partition = self.offsets_partition(request.group_id)
        return self._add(
            ctx,
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            {partition},
            answer,
        )

    # -- EndTxn ---------------------------------------------------------------------------------

    def end_txn(self, ctx: RequestContext, request: Any) -> TxnResult:
        """Kafka's ``handleEndTransaction`` (TV1: the epoch stays across transactions)."""

        def answer(code: ErrorCode) -> Any:
            return _response(ctx, error_code=code, producer_id=-1, producer_epoch=-1)

        commit = bool(request.committed)
        md, code = self._check_producer(
            ctx, request.transactional_id, request.producer_id, request.producer_epoch
        )
        if md is None:
            return TxnResult(response=answer(code))
        if md.pending_state is not None:
            return TxnResult(response=answer(ErrorCode.concurrent_transactions))
        state = md.state
        if state is TxnState.ONGOING:
            return self._end(md, commit, answer, fence=False)
        same = {
            TxnState.COMPLETE_COMMIT: (True, ErrorCode.none),
            TxnState.COMPLETE_ABORT: (False, ErrorCode.none),
            TxnState.PREPARE_COMMIT: (True, ErrorCode.concurrent_transactions),
            TxnState.PREPARE_ABORT: (False, ErrorCode.concurrent_transactions),
        }.get(state)
        if same is not None and same[0] == commit:
            return TxnResult(response=answer(same[1]))
        logger.info(
            "EndTxn in a state that does not allow it",
            extra=fields(
                transactional_id=md.transactional_id, state=state.wire_name, commit=commit
            ),
        )
        return TxnResult(response=answer(ErrorCode.invalid_txn_state))

    # -- markers --------------------------------------------------------------------------------

    def markers_written(self, transactional_id: str, producer_id: int, epoch: int) -> TxnResult:
        """Every marker of the decided transaction is in its partition: write Complete*."""
        md = self.transactions.get(transactional_id)
        if (
            md is None
            or md.producer_id != producer_id
            or md.producer_epoch != epoch
            or not md.state.is_prepare
            or md.pending_state is not None
        ):
            return TxnResult()
        value = md.prepare_complete(self.clock.now_ms())
        return self._write(md, value, lambda error: TxnResult())

    def awaits_completion(self, transactional_id: str, producer_id: int, epoch: int) -> bool:
        """Still decided-but-not-complete (a failed Complete* write is retried by the runtime)."""
        md = self.transactions.get(transactional_id)
        return (
            md is not None
            and md.producer_id == producer_id
            and md.producer_epoch == epoch
            and md.state.is_prepare
        )

    def verify_partition(
        self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition
    ) -> ErrorCode:
        """KIP-890 part 1 on one node: may this producer write transactionally to
        ``partition`` now? INVALID_PRODUCER_EPOCH for a fenced epoch, INVALID_TXN_STATE when the
        partition was not added to an ongoing transaction."""
        md = self.transactions.get(transactional_id)
        if md is None or md.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if epoch != md.producer_epoch:
            return ErrorCode.invalid_producer_epoch
        if md.state is not TxnState.ONGOING or partition not in md.partitions:
            return ErrorCode.invalid_txn_state
        return ErrorCode.none

    # -- timers ---------------------------------------------------------------------------------

    def abort_timed_out(self) -> TxnResult:
        """Kafka's ``abortTimedOutTransactions``: fence and abort each Ongoing transaction past
        its timeout (the producer's next request gets fenced); then re-arm the scan."""
        now = self.clock.now_ms()
        steps = []
        for md in list(self.transactions.values()):
            if (
                md.state is TxnState.ONGOING
                and md.pending_state is None
                and md.start_ms + md.timeout_ms < now
            ):
                logger.info(
                    "aborting timed-out transaction",
                    extra=fields(transactional_id=md.transactional_id, timeout_ms=md.timeout_ms),
                )
                steps.append(self._fence_and_abort(md, lambda code: None))
        self.timer.schedule(
            ABORT_SCAN_KEY, self.config.abort_scan_interval_ms, self.abort_timed_out
        )
        return TxnResult(also=tuple(steps))

    def expire_transactional_ids(self) -> TxnResult:
        """Ids idle in Empty/Complete* for ``transactional.id.expiration.ms`` get a tombstone."""
        now = self.clock.now_ms()
        records: list[TxnRecord] = []
        for txn_id, md in list(self.transactions.items()):
            if (
                md.state.is_expirable
                and md.pending_state is None
                and now - md.last_update_ms >= self.config.id_expiration_ms
            ):
                records.append(txn_tombstone(txn_id))
                md.pending_state = TxnState.DEAD
        expired = {r.transactional_id for r in records}

        def on_append(error: ErrorCode | None) -> TxnResult:
            for txn_id in expired:
                md = self.transactions.get(txn_id)
                if md is None:
                    continue
                if error is None:
                    md.state = TxnState.DEAD
                    del self.transactions[txn_id]
                else:
                    md.pending_state = None
            return TxnResult()

        self.timer.schedule(
            EXPIRE_SCAN_KEY, self.config.id_scan_interval_ms, self.expire_transactional_ids
        )
        if not records:
            return TxnResult()
        return TxnResult(records=tuple(records), on_append=on_append)

    # -- admin ----------------------------------------------------------------------------------

    def describe_transactions(self, ctx: RequestContext, request: Any) -> TxnResult:
        return TxnResult(response=admin.describe_transactions(self.transactions, ctx, request))

    def list_transactions(self, ctx: RequestContext, request: Any) -> TxnResult:
        now = self.clock.now_ms()
        return TxnResult(response=admin.list_transactions(self.transactions, now, ctx, request))

    # -- persistence ----------------------------------------------------------------------------

    def replay_bytes(self, key: bytes, value: bytes | None) -> None:
        """Apply one ``__transaction_state`` record at load: the last value per id wins, a
        tombstone forgets the id, unknown key versions are skipped."""
        txn_id = decode_key(key)
        if txn_id is None:
            return
        if value is None:
            self.transactions.pop(txn_id, None)
            return
        self.transactions[txn_id] = TransactionMetadata.from_value(txn_id, decode_value(value))

    def on_loaded(self) -> TxnResult:
        """Resume every decided transaction's markers (Kafka's ``onElection``); Ongoing ones
        wait for EndTxn or the timeout scan. Starts the scans."""
        markers = tuple(
            self._markers(md) for md in self.transactions.values() if md.state.is_prepare
        )
        self.timer.schedule(
            ABORT_SCAN_KEY, self.config.abort_scan_interval_ms, self.abort_timed_out
        )
        self.timer.schedule(
            EXPIRE_SCAN_KEY, self.config.id_scan_interval_ms, self.expire_transactional_ids
        )
        return TxnResult(markers=markers)

    def pending_markers(self) -> Iterable[TxnMarkers]:
        """Markers of every transaction still in Prepare* (for a runtime retrying writes)."""
        return [self._markers(md) for md in self.transactions.values() if md.state.is_prepare]
