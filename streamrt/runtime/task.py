"""StreamTask: one input partition's processors, run over its state manager's stores.

A task runs records through its sub-topology depth first and sends sink and changelog records
through a :class:`RecordCollector` (the thread's producer). Its stores, their changelog
partitions, the directory lock and the checkpoint hint belong to its :class:`StateManager`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamrt.logs import fields
from streamrt.runtime.exception_handlers import (
    ErrorContext,
    RecordErrorHandlers,
    RecordFailedError,
    Stage,
    parse_handler,
)
from streamrt.runtime.processor import KeyValueStore, Processor, Punctuator
from streamrt.runtime.stores import (
    CachingStore,
    ChangeLoggingStore,
    RecordCache,
    RecordCollector,
    RecordContext,
)
from streamrt.runtime.topology import (
    ProcessorNode,
    SinkNode,
    SourceNode,
    SubTopology,
    Topology,
    changelog_topic,
)
from streamrt.state import ROCKS_DB, StateManager, StoreKind, TopicPartition

__all__ = (
    "DeserializationError",
    "RecordCollector",
    "StreamTask",
    "TaskId",
    "TopicPartition",
)

logger = logging.getLogger(__name__)


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


class DeserializationError(RecordFailedError):
    """A record could not be deserialized and the handler is ``log_and_fail``."""


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
        return self.task.record.topic

    @property
    def partition(self) -> int:
        return self.task.task_id.partition

    @property
    def offset(self) -> int:
        return self.task.record.offset

    @property
    def timestamp(self) -> int:
        return self.task.record.timestamp

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
    """Responsibilities: open its state and processors, process records, punctuate, report
    the input offsets processed since the last commit."""

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
        default_store: StoreKind = ROCKS_DB,
        errors: RecordErrorHandlers | None = None,
        cache: RecordCache | None = None,
    ) -> None:
        self.task_id = task_id
        self.subtopology = subtopology
        self.topology = topology
        self.application_id = application_id
        self.collector = collector
        self.errors = errors or RecordErrorHandlers(
            deserialization=parse_handler("deserialization_handler", deserialization_handler)
        )
        self._raw: tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...]] = (
            None,
            None,
            (),
        )
        self.inputs = [TopicPartition(t, task_id.partition) for t in subtopology.source_topics]
        self.state = StateManager(str(task_id), state_dir / application_id / str(task_id))
        for name in subtopology.stores:
            kind = topology.stores[name].kind or default_store
            changelog = TopicPartition(changelog_topic(application_id, name), task_id.partition)
            self.state.register(name, changelog, kind)
        self.stores: dict[str, ChangeLoggingStore | CachingStore] = {}
        # the thread's record cache (None or 0 bytes: every update goes through at once)
        self.cache = cache if cache is not None and cache.max_bytes > 0 else None
        self.processed: dict[TopicPartition, int] = {}  # next offset to commit per input
        self._input_of = {tp.topic: tp for tp in self.inputs}
        self.records_processed = 0
        self.record = RecordContext(partition=task_id.partition)
        self._processors: dict[str, Processor] = {}
        self._contexts: dict[str, _NodeContext] = {}
        self._sources = {
            topology.topic_of(n, application_id): n
            for n in (topology.nodes[m] for m in subtopology.nodes)
            if isinstance(n, SourceNode)
        }

    @property
    def directory(self) -> Path:
        return self.state.directory

    @property
    def changelogs(self) -> dict[str, TopicPartition]:
        """Store name → its changelog partition (as registered with the state manager)."""
        return {name: self.state.changelog_of(name) for name in self.state.store_names}

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> dict[TopicPartition, int | None]:
        """Lock the directory, open stores and init processors.

        Returns each changelog partition with the offset its store has reached (``None``: the
        store has no checkpoint and must be restored from the beginning).
        """
        positions = self.state.open()
        try:
            for name in self.state.store_names:
                spec = self.topology.stores[name]
                logged = ChangeLoggingStore(
                    spec,
                    self.state.store(name),
                    self.state.changelog_of(name),
                    self.collector,
                    self.record,
                )
                cached = self.cache is not None and spec.caching
                self.stores[name] = (
                    CachingStore(logged, self.cache, self.record)
                    if cached and self.cache is not None
                    else logged
                )
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
        self._contexts.clear()
        self.stores.clear()
        self.state.close()

    # -- processing ------------------------------------------------------------------------

    def process(
        self,
        topic: str,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Any = (),
    ) -> None:
        """Run one input record through the sub-topology (depth first).

        A record its handlers skip still counts as consumed; a FAIL raises
        :class:`RecordFailedError` before the offset is committed, so it is read again.
        """
        source = self._sources[topic]
        self.record.topic, self.record.offset, self.record.timestamp = topic, offset, timestamp
        self.processed[self._input_of[topic]] = offset + 1
        self._raw = (key, value, tuple(headers or ()))
        try:
            k = source.key_serde.deserialize(key)
            v = source.value_serde.deserialize(value)
        except Exception as exc:
            context = self._error_context(Stage.DESERIALIZATION, source.name)
            try:
                self.errors.handle(context, exc, self.collector)  # type: ignore[arg-type]
            except RecordFailedError as failed:
                raise DeserializationError(failed.context, exc, failed.handler) from exc
            return
        self._contexts[source.name].forward(k, v)
        self.records_processed += 1

    def _error_context(self, stage: Stage, node: str | None) -> ErrorContext:
        key, value, headers = self._raw
        return ErrorContext(
            stage,
            self.record.topic,
            self.task_id.partition,
            self.record.offset,
            self.record.timestamp,
            key,
            value,
            headers,
            str(self.task_id),
            node,
        )

    def deliver(self, node_name: str, key: Any, value: Any) -> None:
        node = self.topology.nodes[node_name]
        if isinstance(node, SinkNode):
            try:
                key_bytes = node.key_serde.serialize(key)
                value_bytes = node.value_serde.serialize(value)
            except Exception as exc:  # a sink serde error: the production handler decides
                context = self._error_context(Stage.PRODUCTION, node_name)
                self.errors.handle(context, exc, self.collector)  # type: ignore[arg-type]
                return
            self.collector.send(
                self.topology.topic_of(node, self.application_id),
                key_bytes,
                value_bytes,
                None,
                self.record.timestamp,
            )
            return
        try:
            self._processors[node_name].process(key, value)
        except RecordFailedError:
            raise  # a descendant's handler already decided
        except Exception as exc:  # user code: the processing handler decides for this node
            context = self._error_context(Stage.PROCESSING, node_name)
            self.errors.handle(context, exc, self.collector)  # type: ignore[arg-type]

    def punctuate(self, now_ms: int) -> int:
        """Run due punctuators at ``now_ms`` (the thread's clock); returns how many ran."""
        ran = 0
        for ctx in self._contexts.values():
            for schedule in ctx.schedules:
                if schedule.next_ms is None:
                    schedule.next_ms = now_ms + schedule.interval_ms
                elif now_ms >= schedule.next_ms:
                    self.record.timestamp = now_ms
                    schedule.punctuator(now_ms)
                    schedule.next_ms = now_ms + schedule.interval_ms
                    ran += 1
        return ran

    # -- commit (see runtime.commit) -------------------------------------------------------

    def flush_cache(self) -> None:
        """Step 0 of a commit: cached updates go to the stores, changelogs and downstream."""
        for store in self.stores.values():
            store.flush_cache()

    def flush_state(self, delivered: dict[TopicPartition, int]) -> None:
        """Step 2 of a commit: each store's data with the changelog offset it reached."""
        self.state.flush(delivered)

    def discard_uncommitted(self) -> None:
        """Exactly-once abort: drop staged store writes and the input offsets processed since
        the last commit; the input is read again from the committed offsets."""
        self.state.discard()
        self.processed = {}

    def take_offsets(self) -> dict[TopicPartition, int]:
        """Input offsets processed since the last commit (next offset to read)."""
        out, self.processed = self.processed, {}
        return out
