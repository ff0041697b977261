"""StateManager: the stores of one task and their changelog partitions (Kafka Streams'
ProcessorStateManager).

It is the only owner of a task's stores: it locks the task directory, opens each registered
store, flushes data with the changelog offset reached, writes the checkpoint hint, and offers
restoration its entry points (positions, apply a batch, mark restored). Nothing else holds a
store's lifecycle, and stores know nothing of their task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from streamrt.state.checkpoint import write_checkpoint_hint
from streamrt.state.lock import DirectoryLock
from streamrt.state.memory import InMemoryStore
from streamrt.state.rocksdb import RocksDBStore
from streamrt.state.store import IN_MEMORY, KeyValueStore, StoreKind
from streamrt.state.timestamped import encode_rows, upgrade_store_directory
from streamrt.state.window_store import SegmentedStore, SegmentSpec
from streamrt.topic_partition import TopicPartition

__all__ = ("TopicPartition", "StateManager", "StoreRegistration", "make_store")

logger = logging.getLogger(__name__)


StoreFactory = Callable[[str, Path], KeyValueStore]


def make_store(
    kind: StoreKind, name: str, directory: Path, segments: SegmentSpec | None = None
) -> KeyValueStore:
    """A store of ``kind`` named ``name`` under a task's ``directory`` (segmented by time,
    for window and session stores, when ``segments`` is given)."""
    if segments is not None:
        return SegmentedStore(name, segments, None if kind == IN_MEMORY else directory / name)
    if kind == IN_MEMORY:
        return InMemoryStore(name)
    return RocksDBStore(name, directory / name)


@dataclass(frozen=True, slots=True)
class StoreRegistration:
    name: str
    changelog: TopicPartition
    kind: StoreKind
    segments: SegmentSpec | None = None
    timestamped: bool = False  # values stored with their row timestamp (see .timestamped)


class _NoLock:
    """Stands in for the directory lock when a single owner is guaranteed (test driver)."""

    held = False

    def acquire(self) -> None:
        self.held = True

    def release(self) -> None:
        self.held = False


class StateManager:
    """Responsibilities: lock the task directory, open/close/flush stores, checkpoint hint,
    restoration entry points. Changelog partitions are registered explicitly, never guessed."""

    def __init__(self, task_id: str, directory: Path, *, lock: bool = True) -> None:
        """``lock=False`` (the test driver, in-memory stores only): touch no disk at all."""
        self.task_id = task_id
        self.directory = directory
        self._lock: DirectoryLock | _NoLock = DirectoryLock(directory) if lock else _NoLock()
        self._registered: dict[str, StoreRegistration] = {}
        self._by_changelog: dict[TopicPartition, str] = {}
        self._stores: dict[str, KeyValueStore] = {}
        self._reached: dict[TopicPartition, int] = {}  # written, not checkpointed (ALOS)

    # -- registration and lifecycle --------------------------------------------------------

    def register(
        self,
        name: str,
        changelog: TopicPartition,
        kind: StoreKind,
        *,
        segments: SegmentSpec | None = None,
        timestamped: bool = False,
    ) -> None:
        """Declare a store and its changelog partition; done before :meth:`open`."""
        if name in self._registered or changelog in self._by_changelog:
            raise ValueError(f"task {self.task_id}: store {name} or {changelog} registered twice")
        self._registered[name] = StoreRegistration(name, changelog, kind, segments, timestamped)
        self._by_changelog[changelog] = name

    def open(self) -> dict[TopicPartition, int | None]:
        """Lock the directory and open every registered store.

        Returns each changelog partition with the offset its store reached (``None``: never
        checkpointed, restore from the beginning). Raises StateLockedError if another owner
        holds the directory. Already open (a standby's state recycled for its active task):
        the stores stay as they are.
        """
        if self.is_open and len(self._stores) == len(self._registered):
            return self.positions()
        self._lock.acquire()
        try:
            for reg in self._registered.values():
                if (
                    reg.timestamped
                    and reg.kind != IN_MEMORY
                    and isinstance(self._lock, DirectoryLock)
                ):
                    upgrade_store_directory(self.directory, reg.name)
                store = make_store(reg.kind, reg.name, self.directory, reg.segments)
                store.open()
                self._stores[reg.name] = store
        except BaseException:
            self.close()
            raise
        return self.positions()

    def close(self) -> None:
        """Close every store (unflushed writes are covered by the changelog), release the lock."""
        for name, store in self._stores.items():
            try:
                store.close()
            except Exception:
                logger.exception("store close failed", extra={"task": self.task_id, "store": name})
        self._stores.clear()
        self._reached.clear()
        self._lock.release()

    @property
    def is_open(self) -> bool:
        return self._lock.held

    @property
    def registrations(self) -> tuple[StoreRegistration, ...]:
        """What was registered: a state can serve another task only if theirs are equal."""
        return tuple(self._registered.values())

    # -- what the task and the commit need -------------------------------------------------

    def store(self, name: str) -> KeyValueStore:
        """The open store ``name`` (KeyError if not registered or not open)."""
        return self._stores[name]

    @property
    def store_names(self) -> tuple[str, ...]:
        return tuple(self._registered)

    def changelog_of(self, name: str) -> TopicPartition:
        return self._registered[name].changelog

    @property
    def changelog_partitions(self) -> tuple[TopicPartition, ...]:
        return tuple(self._by_changelog)

    def flush(self, changelog_end: Mapping[TopicPartition, int]) -> None:
        """Write each store's staged data with the changelog offset it reached (one batch per
        store), then the checkpoint hint. Partitions not in ``changelog_end`` keep their
        stored offset: nothing of theirs was delivered since."""
        for name, store in self._stores.items():
            store.flush(changelog_end.get(self._registered[name].changelog))
        self.write_checkpoint()

    def flush_data(self, changelog_end: Mapping[TopicPartition, int]) -> None:
        """Write each store's staged data, its changelog offset unchanged; remember the ends
        reached for :meth:`checkpoint`. At-least-once moves the offsets only once the input
        offsets are committed: until then a restore starts from the older offset and applies
        the changelog again over this data (duplicates, never a gap)."""
        for store in self._stores.values():
            store.flush(None)
        self.remember_ends(changelog_end)

    def remember_ends(self, changelog_end: Mapping[TopicPartition, int]) -> None:
        """Keep the ends reached by this manager's changelogs for :meth:`checkpoint`: the
        producer reports each delivery once, to whichever commit flushed it, and the stores'
        data written by the next :meth:`flush_data` covers every record sent before."""
        self._reached.update((tp, o) for tp, o in changelog_end.items() if tp in self._by_changelog)

    def checkpoint(self) -> None:
        """The commit was accepted: each store is at the changelog end :meth:`flush_data`
        remembered (partitions with nothing delivered keep theirs), then the hint."""
        reached, self._reached = self._reached, {}
        self.flush(reached)

    def persist(self) -> None:
        """Ask every store to write its in-memory data to its files in the background, so the
        close that follows soon (a hand-off) is quick."""
        for store in self._stores.values():
            store.persist()

    def discard(self) -> None:
        """Drop every store's staged writes and the ends not checkpointed (exactly-once: the
        Kafka transaction that carried their changelog records aborted, so they must never
        reach the stores' durable state; at-least-once: the task migrated)."""
        for store in self._stores.values():
            store.discard()
        self._reached.clear()

    def write_checkpoint(self) -> None:
        persistent = {n: s.changelog_offset() for n, s in self._stores.items() if s.persistent}
        if persistent:
            write_checkpoint_hint(self.directory, persistent)

    # -- restoration entry points ----------------------------------------------------------

    def positions(self) -> dict[TopicPartition, int | None]:
        """Changelog partition → the offset its store reached (``None``: from the start)."""
        return {
            self._registered[n].changelog: s.changelog_offset() for n, s in self._stores.items()
        }

    def position(self, changelog: TopicPartition) -> int | None:
        return self._stores[self._by_changelog[changelog]].changelog_offset()

    def store_for(self, changelog: TopicPartition) -> str:
        """The name of the store restored from ``changelog``."""
        return self._by_changelog[changelog]

    def restore_batch(
        self,
        changelog: TopicPartition,
        records: Iterable[tuple[bytes, bytes | None] | tuple[bytes, bytes | None, int]],
        next_offset: int,
    ) -> None:
        """Apply a batch of changelog records ``(key, value[, record timestamp])`` and the
        offset after them, atomically; a timestamped store keeps the timestamp with the value
        (:data:`NO_TIMESTAMP` when the record's is not given)."""
        name = self._by_changelog[changelog]
        if not self._registered[name].timestamped:
            self._stores[name].write_batch(((r[0], r[1]) for r in records), next_offset)
            return
        self._stores[name].write_batch(encode_rows(records), next_offset)

    def mark_restored(self, changelog: TopicPartition, end: int) -> None:
        """Record that the store is complete up to ``end`` (the position may pass compacted
        or marker offsets without a record), and refresh the checkpoint hint."""
        self._stores[self._by_changelog[changelog]].flush(end)
        self.write_checkpoint()
