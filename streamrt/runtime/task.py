"""StreamTask: one input partition's processors and state stores.

A task owns its directory ``<state.dir>/<application.id>/<task id>`` (locked), opens its
stores there, runs records through its sub-topology depth first, and sends sink and
changelog records through a :class:`RecordCollector` (the thread's producer).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from streamrt.logs import fields
from streamrt.runtime.processor import KeyValueStore, Processor, Punctuator
from streamrt.runtime.topology import (
    ProcessorNode,
    SinkNode,
    SourceNode,
    StoreSpec,
    SubTopology,
    Topology,
    changelog_topic,
)
from streamrt.state import DirectoryLock, RocksDBStore

__all__ = ("RecordCollector", "StreamTask", "TaskId", "TopicPartition")

logger = logging.getLogger(__name__)


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True, order=True)
class TaskId:
    """``<subtopology>_<partition>``, as Kafka Streams names tasks."""

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        sub, _, part = text.partition("_")
        return cls(int(sub), int(part))


class RecordCollector(Protocol):
    """Where a task's output goes; the thread's producer drains it in order."""

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
    ) -> None: ...


class DeserializationError(Exception):
    """A record could not be deserialized and the handler is ``log_and_fail``."""


class ChangeLoggingStore:
    """A typed store view whose every write also goes to the store's changelog partition."""

    def __init__(
        self, spec: StoreSpec, store: RocksDBStore, changelog: TopicPartition, task: StreamTask
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.store = store
        self.changelog = changelog
        self._task = task

    def get(self, key: Any) -> Any:
        raw = self.store.get(self._key(key))
        return None if raw is None else self.spec.value_serde.deserialize(raw)

    def put(self, key: Any, value: Any) -> None:
        kb = self._key(key)
        vb = self.spec.value_serde.serialize(value)
        if vb is None:
            self.delete(key)
            return
        self.store.put(kb, vb)
        self._log(kb, vb)

    def delete(self, key: Any) -> None:
        kb = self._key(key)
        self.store.delete(kb)
        self._log(kb, None)

    def items(self) -> Iterator[tuple[Any, Any]]:
        for kb, vb in self.store.items():
            yield self.spec.key_serde.deserialize(kb), self.spec.value_serde.deserialize(vb)

    def _key(self, key: Any) -> bytes:
        kb = self.spec.key_serde.serialize(key)
        if kb is None:
            raise ValueError(f"store {self.name}: keys must not be None")
        return kb

    def _log(self, key: bytes, value: bytes | None) -> None:
        self._task.collector.send(
            self.changelog.topic, key, value, self.changelog.partition, self._task.timestamp
        )


@dataclass(slots=True)
class _Schedule:
    interval_ms: int
    punctuator: Punctuator
    next_ms: int | None = None


@dataclass(slots=True)
class _NodeContext:
    """The ProcessorContext of one node in one task."""

    task: StreamTask
    node: str
    children: list[str]
    schedules: list[_Schedule] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        return str(self.task.task_id)

    @property
    def topic(self) -> str:
        return self.task.topic

    @property
    def partition(self) -> int:
        return self.task.task_id.partition

    @property
    def offset(self) -> int:
        return self.task.offset

    @property
    def timestamp(self) -> int:
        return self.task.timestamp

    def forward(self, key: Any, value: Any, to: str | None = None) -> None:
        for child in self.children:
            if to is None or child == to:
                self.task.deliver(child, key, value)

    def get_store(self, name: str) -> KeyValueStore:
        return self.task.stores[name]

    def schedule(self, interval_ms: int, punctuator: Punctuator) -> None:
        if interval_ms <= 0:
            raise ValueError("punctuation interval must be positive")
        self.schedules.append(_Schedule(interval_ms, punctuator))


class StreamTask:
    """Responsibilities: lock and open stores, process records, punctuate, report offsets."""

    def __init__(
        self,
        task_id: TaskId,
        subtopology: SubTopology,
        topology: Topology,
        application_id: str,
        state_dir: Path,
        collector: RecordCollector,
        *,
        deserialization_handler: str = "log_and_fail",
    ) -> None:
        self.task_id = task_id
        self.subtopology = subtopology
        self.topology = topology
        self.application_id = application_id
        self.directory = state_dir / application_id / str(task_id)
        self.collector = collector
        self.deserialization_handler = deserialization_handler
        self.inputs = [TopicPartition(t, task_id.partition) for t in subtopology.source_topics]
        self.changelogs = {
            name: TopicPartition(changelog_topic(application_id, name), task_id.partition)
            for name in subtopology.stores
        }
        self.stores: dict[str, ChangeLoggingStore] = {}
        self.processed: dict[TopicPartition, int] = {}  # next offset to commit per input
        self.records_processed = 0
        self.topic = ""
        self.offset = -1
        self.timestamp = 0
        self._lock = DirectoryLock(self.directory)
        self._processors: dict[str, Processor] = {}
        self._contexts: dict[str, _NodeContext] = {}
        self._sources = {
            topology.topic_of(n, application_id): n
            for n in (topology.nodes[m] for m in subtopology.nodes)
            if isinstance(n, SourceNode)
        }

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> dict[TopicPartition, int | None]:
        """Lock the directory, open stores and init processors.

        Returns each changelog partition with the offset its store has reached (``None``: the
        store has no checkpoint and must be restored from the beginning).
        """
        self._lock.acquire()
        positions: dict[TopicPartition, int | None] = {}
        try:
            for name, changelog in self.changelogs.items():
                raw = RocksDBStore(name, self.directory / name)
                raw.open()
                self.stores[name] = ChangeLoggingStore(
                    self.topology.stores[name], raw, changelog, self
                )
                positions[changelog] = raw.changelog_offset()
            for name in self.subtopology.nodes:
                node = self.topology.nodes[name]
                ctx = _NodeContext(self, name, list(node.children))
                self._contexts[name] = ctx
                if isinstance(node, ProcessorNode):
                    processor = node.supplier()
                    processor.init(ctx)
                    self._processors[name] = processor
        except BaseException:
            self.close()
            raise
        return positions

    def close(self) -> None:
        for processor in self._processors.values():
            try:
                processor.close()
            except Exception:
                logger.exception("processor close failed", extra=fields(task=str(self.task_id)))
        self._processors.clear()
        for store in self.stores.values():
            store.store.close()
        self.stores.clear()
        self._lock.release()

    # -- processing ------------------------------------------------------------------------

    def process(
        self, topic: str, offset: int, timestamp: int, key: bytes | None, value: bytes | None
    ) -> None:
        """Run one input record through the sub-topology (depth first)."""
        source = self._sources[topic]
        self.topic, self.offset, self.timestamp = topic, offset, timestamp
        self.processed[TopicPartition(topic, self.task_id.partition)] = offset + 1
        try:
            k = source.key_serde.deserialize(key)
            v = source.value_serde.deserialize(value)
        except Exception as exc:
            if self.deserialization_handler == "log_and_fail":
                raise DeserializationError(
                    f"cannot deserialize {topic}-{self.task_id.partition}@{offset}: {exc}"
                ) from exc
            logger.warning(
                "skipping a record that cannot be deserialized",
                extra=fields(
                    topic=topic, partition=self.task_id.partition, offset=offset, error=str(exc)
                ),
            )
            return
        self._contexts[source.name].forward(k, v)
        self.records_processed += 1

    def deliver(self, node_name: str, key: Any, value: Any) -> None:
        node = self.topology.nodes[node_name]
        if isinstance(node, SinkNode):
            self.collector.send(
                self.topology.topic_of(node, self.application_id),
                node.key_serde.serialize(key),
                node.value_serde.serialize(value),
                None,
                self.timestamp,
            )
        else:
            self._processors[node_name].process(key, value)

    def punctuate(self, now_ms: int) -> int:
        """Run due punctuators (wall clock); returns how many ran."""
        ran = 0
        for ctx in self._contexts.values():
            for schedule in ctx.schedules:
                if schedule.next_ms is None:
                    schedule.next_ms = now_ms + schedule.interval_ms
                elif now_ms >= schedule.next_ms:
                    self.timestamp = now_ms
                    schedule.punctuator(now_ms)
                    schedule.next_ms = now_ms + schedule.interval_ms
                    ran += 1
        return ran

    # -- commit ----------------------------------------------------------------------------

    def flush_stores(self, changelog_end: dict[TopicPartition, int]) -> None:
        """Write each store's staged data with the changelog offset it reached, atomically."""
        for name, store in self.stores.items():
            store.store.flush(changelog_end.get(self.changelogs[name]))
        if self.stores:
            write_checkpoint_hint(
                self.directory, {n: s.store.changelog_offset() for n, s in self.stores.items()}
            )

    def take_offsets(self) -> dict[TopicPartition, int]:
        """Input offsets processed since the last commit (next offset to read)."""
        out, self.processed = self.processed, {}
        return out


CHECKPOINT_HINT = ".checkpoint"


def write_checkpoint_hint(directory: Path, offsets: dict[str, int | None]) -> None:
    """Store → changelog offset, beside the stores, for the assignor's subscription.

    The offsets inside each RocksDB WriteBatch stay the truth for restoration; this file is a
    hint readable without opening (and locking) the stores, as Kafka Streams' ``.checkpoint``.
    Written after the stores, so it never claims more than they hold.
    """
    tmp = directory / (CHECKPOINT_HINT + ".tmp")
    tmp.write_text(json.dumps({k: v for k, v in offsets.items() if v is not None}))
    tmp.replace(directory / CHECKPOINT_HINT)


def read_checkpoint_hint(directory: Path) -> dict[str, int]:
    """The offsets last written by :func:`write_checkpoint_hint`; empty if none or unreadable."""
    try:
        raw = json.loads((directory / CHECKPOINT_HINT).read_text())
        return {str(k): int(v) for k, v in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
