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
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("BatchMetadata", "ProducerEntry", "ProducerStateManager")

_CACHED_BATCHES = 5  # Kafka's NUM_BATCHES_TO_RETAIN


@dataclasses.dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    timestamp: int


@dataclasses.dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = dataclasses.field(
        default_factory=lambda: deque(maxlen=_CACHED_BATCHES)
    )
    last_timestamp: int = -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.epoch, deque(self.batches, maxlen=_CACHED_BATCHES), self.last_timestamp
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

    def check(
        self, h: BatchHeader, base_offset: int, pending: dict[int, ProducerEntry]
    ) -> BatchMetadata | None:
        """Check one batch (to be written at ``base_offset``) against the state plus ``pending``.

        Returns the original batch's metadata if ``h`` duplicates one of the last five batches
        (not to be written). Otherwise records the batch in ``pending``, which the caller
        commits with :meth:`commit` once the write succeeded. Raises ``invalid_producer_epoch``
        for an older epoch and ``out_of_order_sequence_number`` for a gap or a new epoch not
        starting at sequence 0.
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
                pending[h.producer_id] = entry
                return None
            entry = known.copy()
        if h.producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"producer {h.producer_id} epoch {h.producer_epoch} < current {entry.epoch}",
            )
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
        entry.record(h, base_offset)
        pending[h.producer_id] = entry
        return None

    def commit(self, pending: Mapping[int, ProducerEntry]) -> None:
        self.producers.update(pending)

    def load_batch(self, h: BatchHeader) -> None:
        """Replay one stored batch header (load-time rebuild: no checks)."""
        if h.producer_id < 0 or h.is_control:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_epoch)
        elif h.producer_epoch < entry.epoch:
            return
        entry.record(h, h.base_offset)

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """Forget producers idle for ``producer.id.expiration.ms``."""
        for pid in [
            p for p, e in self.producers.items() if now_ms - e.last_timestamp > expiration_ms
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
                entry = ProducerEntry(int(e["epoch"]), last_timestamp=int(e["last_timestamp"]))
                entry.batches.extend(BatchMetadata(*map(int, b)) for b in e["batches"])
                state.producers[int(pid)] = entry
            return int(doc["offset"]), state
        except (OSError, ValueError, KeyError, TypeError):
            return None
