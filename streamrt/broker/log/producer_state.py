"""Idempotent-producer state of one partition: producer id → epoch and its last five batches.

This is what lets a retried Produce be answered with the original offsets instead of being
written twice (Kafka's ``ProducerStateManager``/``ProducerAppendInfo``). The state is derived
from batch headers only, so it is rebuilt at load by scanning headers; a snapshot taken at
segment roll and at close bounds that scan to the segments written since.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamrt.broker.log.batch import BatchHeader, increment_sequence
from streamrt.broker.log.txn_index import AbortedTxn
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("ActiveProducer", "BatchMetadata", "ProducerEntry", "ProducerStateManager")

_CACHED_BATCHES = 5  # Kafka's NUM_BATCHES_TO_RETAIN


@dataclasses.dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    timestamp: int


@dataclasses.dataclass(frozen=True, slots=True)
class ActiveProducer:
    """One producer as DescribeProducers reports it (Kafka's ``ProducerStateEntry`` view)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclasses.dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = dataclasses.field(
        default_factory=lambda: deque(maxlen=_CACHED_BATCHES)
    )
    last_timestamp: int = -1
    #: First offset of this producer's open transaction, -1 when none is open.
    txn_first_offset: int = -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.epoch,
            deque(self.batches, maxlen=_CACHED_BATCHES),
            self.last_timestamp,
            self.txn_first_offset,
        )

    def bump_epoch(self, epoch: int) -> None:
        """A newer epoch (from a marker): the old epoch's sequences are forgotten."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()

    def track_transaction(self, h: BatchHeader, base_offset: int) -> None:
        """Open a transaction at its first batch; a plain batch inside one is refused."""
        if h.is_transactional:
            if self.txn_first_offset < 0:
                self.txn_first_offset = base_offset
        elif self.txn_first_offset >= 0:
            raise KafkaError(
                ErrorCode.invalid_txn_state,
                "non-transactional batch while the producer's transaction is open",
            )

    def record(self, h: BatchHeader, base_offset: int) -> None:
        if h.producer_epoch != self.epoch:
            self.epoch = h.producer_epoch
            self.batches.clear()
        self.batches.append(
            BatchMetadata(
                h.base_sequence,
                h.last_sequence,
                base_offset,
                base_offset + h.last_offset_delta,
                h.max_timestamp,
            )
        )
        self.last_timestamp = max(self.last_timestamp, h.max_timestamp)


class ProducerStateManager:
    """Validates sequence numbers on append and remembers recent batches for duplicate answers."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        #: producer id -> first offset of its open transaction (Kafka's ``ongoingTxns``), kept
        #: beside the entries so the LSO costs no scan of every producer.
        self._ongoing: dict[int, int] = {}

    def check(
        self,
        h: BatchHeader,
        base_offset: int,
        pending: dict[int, ProducerEntry],
        *,
        check_sequence: bool = True,
    ) -> BatchMetadata | None:
        """Check one batch (to be written at ``base_offset``) against the state plus ``pending``.

        Returns the original batch's metadata if ``h`` duplicates one of the last five batches
        (not to be written). Otherwise records the batch in ``pending``, which the caller
        commits with :meth:`commit` once the write succeeded. Raises ``invalid_producer_epoch``
        for an older epoch and ``out_of_order_sequence_number`` for a gap or a new epoch not
        starting at sequence 0, and ``invalid_txn_state`` for a plain batch inside an open
        transaction. ``check_sequence=False`` is Kafka's coordinator append origin
        (transactional offset commits): only the epoch is checked.
        """
        if h.producer_id < 0 or h.is_control:
            return None
        entry = pending.get(h.producer_id)
        if entry is None:
            known = self.producers.get(h.producer_id)
            if known is None:
                # Unknown producer (new, or its state expired): any sequence starts it (KIP-360).
                entry = ProducerEntry(h.producer_epoch)
                entry.record(h, base_offset)
                entry.track_transaction(h, base_offset)
                pending[h.producer_id] = entry
                return None
            entry = known.copy()
        if h.producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"producer {h.producer_id} epoch {h.producer_epoch} < current {entry.epoch}",
            )
        if check_sequence:
            cached = self._check_sequence(h, entry)
            if cached is not None:
                return cached
        entry.track_transaction(h, base_offset)
        entry.record(h, base_offset)
        pending[h.producer_id] = entry
        return None

    @staticmethod
    def _check_sequence(h: BatchHeader, entry: ProducerEntry) -> BatchMetadata | None:
        if h.producer_epoch == entry.epoch:
            for cached in entry.batches:
                if cached.first_seq == h.base_sequence and cached.last_seq == h.last_sequence:
                    return cached
            if entry.batches:
                expected = increment_sequence(entry.batches[-1].last_seq, 1)
                if h.base_sequence != expected:
                    raise KafkaError(
                        ErrorCode.out_of_order_sequence_number,
                        f"producer {h.producer_id}: sequence {h.base_sequence}, "
                        f"expected {expected}",
                    )
        elif h.base_sequence != 0:
            raise KafkaError(
                ErrorCode.out_of_order_sequence_number,
                f"producer {h.producer_id}: new epoch {h.producer_epoch} must start at sequence 0",
            )
        return None

    def commit(self, pending: Mapping[int, ProducerEntry]) -> None:
        self.producers.update(pending)
        for pid, entry in pending.items():
            self._track_ongoing(pid, entry)

    def _track_ongoing(self, pid: int, entry: ProducerEntry) -> None:
        if entry.txn_first_offset >= 0:
            self._ongoing[pid] = entry.txn_first_offset
        else:
            self._ongoing.pop(pid, None)

    def load_batch(self, h: BatchHeader) -> None:
        """Replay one stored data batch header (load-time rebuild: no checks)."""
        if h.producer_id < 0 or h.is_control:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_epoch)
        elif h.producer_epoch < entry.epoch:
            return
        if h.is_transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = h.base_offset
            self._ongoing[h.producer_id] = h.base_offset
        entry.record(h, h.base_offset)

    # --------------------------------------------------------------------------- transactions
    def check_marker(self, producer_id: int, producer_epoch: int) -> None:
        """A marker of an older epoch than the producer's is a zombie coordinator's (47)."""
        entry = self.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"marker epoch {producer_epoch} < producer {producer_id} epoch {entry.epoch}",
            )

    def complete_txn(
        self, producer_id: int, producer_epoch: int, marker_offset: int, commit: bool, ts: int
    ) -> AbortedTxn | None:
        """Apply a marker written at ``marker_offset`` (Kafka's ``appendEndTxnMarker``).

        Ends the producer's open transaction, if any, and adopts the marker's epoch (a fence).
        Returns the aborted-index entry for an aborted transaction: its last stable offset is the
        first offset of the next open transaction of another producer, else the marker + 1.
        """
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_epoch)
        entry.bump_epoch(max(entry.epoch, producer_epoch))
        entry.last_timestamp = max(entry.last_timestamp, ts)
        first = entry.txn_first_offset
        entry.txn_first_offset = -1
        self._ongoing.pop(producer_id, None)
        if first < 0 or commit:
            return None
        unstable = self.first_unstable_offset()
        lso = marker_offset + 1 if unstable is None else min(unstable, marker_offset + 1)
        return AbortedTxn(producer_id, first, marker_offset, lso)

    def active(self) -> list[ActiveProducer]:
        """The producers this partition remembers, by id (the coordinator epoch of their last
        marker is not kept: -1, Kafka's value before any marker)."""
        return [
            ActiveProducer(
                pid,
                e.epoch,
                e.batches[-1].last_seq if e.batches else -1,
                e.last_timestamp,
                -1,
                e.txn_first_offset,
            )
            for pid, e in sorted(self.producers.items())
        ]

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction (the LSO bound), if any."""
        return min(self._ongoing.values(), default=None)

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """Forget producers idle for ``producer.id.expiration.ms`` (never one whose transaction
        is still open: it would unblock the LSO)."""
        for pid in [
            p
            for p, e in self.producers.items()
            if now_ms - e.last_timestamp > expiration_ms and e.txn_first_offset < 0
        ]:
            del self.producers[pid]

    # --------------------------------------------------------------------------- snapshots
    def write_snapshot(self, path: Path, offset: int) -> None:
        """Atomically persist the state as valid for the log up to (excluding) ``offset``."""
        doc: dict[str, Any] = {
            "offset": offset,
            "producers": {
                str(pid): {
                    "epoch": e.epoch,
                    "last_timestamp": e.last_timestamp,
                    "txn_first_offset": e.txn_first_offset,
                    "batches": [dataclasses.astuple(b) for b in e.batches],
                }
                for pid, e in self.producers.items()
            },
        }
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    @classmethod
    def read_snapshot(cls, path: Path) -> tuple[int, ProducerStateManager] | None:
        """``(offset, state)`` from a snapshot file; ``None`` if absent or unreadable."""
        try:
            doc = json.loads(path.read_text())
            state = cls()
            for pid, e in doc["producers"].items():
                entry = ProducerEntry(
                    int(e["epoch"]),
                    last_timestamp=int(e["last_timestamp"]),
                    txn_first_offset=int(e.get("txn_first_offset", -1)),
                )
                entry.batches.extend(BatchMetadata(*map(int, b)) for b in e["batches"])
                state.producers[int(pid)] = entry
                state._track_ongoing(int(pid), entry)
            return int(doc["offset"]), state
        except (OSError, ValueError, KeyError, TypeError):
            return None
