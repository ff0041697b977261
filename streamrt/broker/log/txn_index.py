"""The aborted-transaction index of a partition (Kafka's ``TransactionIndex`` / ``AbortedTxn``).

Each aborted transaction leaves one entry: producer id, first offset, last offset (its ABORT
marker) and the last stable offset when it was aborted. ``read_committed`` fetches return the
entries overlapping the fetched range so clients can drop the aborted batches, and the cleaner
uses the same entries to remove aborted data.

One file per partition instead of Kafka's per-segment ``.txnindex``: it is rewritten atomically
together with the producer-state snapshot, and the entries after the snapshot are rebuilt from
the markers when the log is opened (so a crash between the two loses nothing).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path

from streamrt.broker.log.swap import write_atomically

__all__ = ("AbortedTracker", "AbortedTxn", "TxnIndex")


@dataclasses.dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnIndex:
    """Aborted transactions of one partition, in marker (``last_offset``) order."""

    def __init__(self, entries: Iterable[AbortedTxn] = ()) -> None:
        self.entries: list[AbortedTxn] = list(entries)

    def append(self, entry: AbortedTxn) -> None:
        self.entries.append(entry)

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries a fetch of ``[fetch_offset, upper_bound)`` must report (Kafka's
        ``collectAbortedTxns``): ending at or after the start, beginning before the end."""
        return [
            e
            for e in self.entries
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound
        ]

    def drop_before(self, log_start_offset: int) -> None:
        """Retention moved the log start: entries wholly before it are useless."""
        self.entries = [e for e in self.entries if e.last_offset >= log_start_offset]

    def drop_from(self, offset: int) -> None:
        """Forget entries whose marker is at or after ``offset`` (they are replayed)."""
        self.entries = [e for e in self.entries if e.last_offset < offset]

    def write(self, path: Path, offset: int) -> None:
        """Persist, as valid for the log up to (excluding) ``offset``."""
        doc = {"offset": offset, "aborted": [dataclasses.astuple(e) for e in self.entries]}
        write_atomically(path, json.dumps(doc).encode())

    @classmethod
    def read(cls, path: Path, offset: int) -> TxnIndex | None:
        """The index saved at ``offset``; ``None`` if absent, unreadable or of another offset."""
        try:
            doc = json.loads(path.read_text())
            if int(doc["offset"]) != offset:
                return None
            return cls(AbortedTxn(*map(int, e)) for e in doc["aborted"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


class AbortedTracker:
    """Walks batches in offset order and says which transactional batches were aborted.

    Mirrors the consumer's algorithm (and the cleaner's): a producer becomes "aborting" when the
    walk reaches the first offset of one of its aborted transactions and stops at its marker.
    """

    def __init__(self, entries: Iterable[AbortedTxn]) -> None:
        self._pending = sorted(entries, key=lambda e: e.first_offset)
        self._next = 0
        self._active: dict[int, int] = {}  # producer id -> last offset (its ABORT marker)

    def is_aborted(
        self, base_offset: int, producer_id: int, transactional: bool, control: bool
    ) -> bool:
        """True for a transactional data batch of an aborted transaction."""
        while (
            self._next < len(self._pending)
            and self._pending[self._next].first_offset <= base_offset
        ):
            e = self._pending[self._next]
            if e.last_offset >= base_offset:
                self._active[e.producer_id] = e.last_offset
            self._next += 1
        last = self._active.get(producer_id)
        if last is not None and last < base_offset:
            del self._active[producer_id]
            last = None
        return transactional and not control and last is not None
