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

from streamrt.clock import Clock, SystemClock
from streamrt.logs import fields
from streamrt.runtime.engine.tasks.partition_group import TimestampOf, head_extractor
from streamrt.runtime.engine.tasks.schedule import Schedule
from streamrt.runtime.engine.tasks.sink_writer import PartitionCounts, SinkPlan, sink_plan
from streamrt.runtime.engine.tasks.task_id import TaskId
from streamrt.runtime.exception_handlers import (
    ErrorContext,
    RecordErrorHandlers,
    RecordFailedError,
    Stage,
    parse_handler,
)
from streamrt.runtime.graph.topology import (
    ProcessorNode,
    SinkNode,
    SourceNode,
    SubTopology,
    Topology,
    changelog_topic,
)
from streamrt.runtime.processor import (
    Change,
    Headers,
    KeyValueStore,
    Processor,
    PunctuationType,
    Punctuator,
)
from streamrt.runtime.stores import (
    CachingStore,
    ChangeLoggingStore,
    RecordCache,
    RecordCollector,
    RecordContext,
)
from streamrt.runtime.timestamps import (
    ConsumedRecord,
    TimestampExtractor,
    fail_on_invalid_timestamp,
)
from streamrt.runtime.window_stores import StoreView, store_view
from streamrt.state import ROCKS_DB, StateManager, StoreKind
from streamrt.topic_partition import TopicPartition

__all__ = ("DeserializationError", "RecordCollector", "StreamTask", "TaskId")

logger = logging.getLogger(__name__)


class DeserializationError(RecordFailedError):
    """A record could not be deserialized and the handler is ``log_and_fail``."""


@dataclass(slots=True)
class _NodeContext:
    """The ProcessorContext of one node in one task."""

    task: StreamTask
    node: str
    children: list[str]
    takes_changes: bool = True  # a child takes Change values (TupleForwarder builds them)
    schedules: list[Schedule] = field(default_factory=list)

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

    @property
    def headers(self) -> Headers:
        return self.task.record.headers

    @property
    def stream_time(self) -> int:
        return self.task.stream_time

    def forward(
        self,
        key: Any,
        value: Any,
        to: str | None = None,
        *,
        timestamp: int | None = None,
        headers: Headers | None = None,
    ) -> None:
        if timestamp is not None or headers is not None:
            self._forward_with(key, value, to, timestamp, headers)
            return
        # a table's Change reaches only the children that asked for it; others get the new value
        plain = value.new if isinstance(value, Change) else value
        task = self.task
        accepts = task.accepts_changes
        for child in self.children:
            if to is None or child == to:
                task.deliver(child, key, value if child in accepts else plain)

    def _forward_with(
        self, key: Any, value: Any, to: str | None, timestamp: int | None, headers: Headers | None
    ) -> None:
        """forward() under another timestamp and/or headers, the record's restored after."""
        record = self.task.record
        saved = record.timestamp, record.headers
        if timestamp is not None:
            record.timestamp = timestamp
        if headers is not None:
            record.headers = headers
        try:
            self.forward(key, value, to)
        finally:
            record.timestamp, record.headers = saved

    def get_store(self, name: str) -> KeyValueStore:
        return self.task.stores[name]  # type: ignore[return-value]  # window views differ

    def record_dropped(self) -> None:
        """Count a record skipped on purpose (``dropped-records``; the caller logs why)."""
        self.task.dropped_records += 1

    def schedule(
        self,
        interval_ms: int,
        kind: PunctuationType | Punctuator,
        punctuator: Punctuator | None = None,
    ) -> Schedule:
        if interval_ms < 1:
            raise ValueError("punctuation interval must be at least 1 ms")
        if isinstance(kind, PunctuationType):
            ptype, fn = kind, punctuator
        else:  # schedule(ms, fn): wall-clock time, as before punctuation types existed
            ptype, fn = PunctuationType.WALL_CLOCK_TIME, kind
        if fn is None:
            raise ValueError("schedule needs a punctuator")
        if ptype is PunctuationType.STREAM_TIME:
            first: int | None = 0  # fires as soon as stream time is known
            self.task.stream_time_punctuation = True
        else:
            first = self.task.clock.now_ms() + interval_ms
        schedule = Schedule(interval_ms, fn, ptype, first)
        self.schedules.append(schedule)
        return schedule


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
        timestamp_extractor: TimestampExtractor = fail_on_invalid_timestamp,
        clock: Clock | None = None,
        lock_state: bool = True,
        partition_counts: PartitionCounts | None = None,
    ) -> None:
        self.task_id = task_id
        self.partition_counts = partition_counts  # for sinks with a stream partitioner
        self.subtopology = subtopology
        self.topology = topology
        self.application_id = application_id
        self.collector = collector
        self.errors = errors or RecordErrorHandlers(
            deserialization=parse_handler("deserialization_handler", deserialization_handler)
        )
        self._raw: tuple[bytes | None, bytes | None, Headers] = (None, None, ())
        self.inputs = [TopicPartition(t, task_id.partition) for t in subtopology.source_topics]
        state_path = state_dir / application_id / str(task_id)
        self.state = StateManager(str(task_id), state_path, lock=lock_state)
        self.clock: Clock = clock or SystemClock()
        self.default_extractor = timestamp_extractor
        self.stream_time = -1  # largest timestamp processed; punctuation and joins follow it
        self.stream_time_punctuation = False  # a stream-time schedule exists: check per record
        self.partition_time: dict[str, int] = {}
        self.accepts_changes = frozenset(
            n for n in subtopology.nodes if getattr(topology.nodes[n], "accepts_changes", False)
        )
        self._register_stores(default_store)
        self.stores: dict[str, StoreView | CachingStore] = {}
        # the thread's record cache (None or 0 bytes: every update goes through at once)
        self.cache = cache if cache is not None and cache.max_bytes > 0 else None
        self.processed: dict[TopicPartition, int] = {}  # next offset to commit per input
        self.positions: dict[TopicPartition, int] = {}  # next offset per input, for its lag
        self._input_of = {tp.topic: tp for tp in self.inputs}
        self.records_processed = 0
        self.dropped_records = 0  # Kafka's task sensor ``dropped-records`` (late records, ...)
        self.record = RecordContext(partition=task_id.partition)
        self._processors: dict[str, Processor] = {}
        self._sinks: dict[str, SinkPlan] = {}
        self._contexts: dict[str, _NodeContext] = {}
        self._sources = {
            topology.topic_of(n, application_id): n
            for n in (topology.nodes[m] for m in subtopology.nodes)
            if isinstance(n, SourceNode)
        }

    def _register_stores(self, default_store: StoreKind) -> None:
        """Each store of the sub-topology, with its changelog partition (this task's)."""
        for name in self.subtopology.stores:
            spec = self.topology.stores[name]
            changelog = TopicPartition(
                changelog_topic(self.application_id, name), self.task_id.partition
            )
            self.state.register(
                name,
                changelog,
                spec.kind or default_store,
                segments=spec.segments,
                timestamped=spec.timestamped,
            )

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
                view = store_view(
                    spec,
                    self.state.store(name),
                    self.state.changelog_of(name),
                    self.collector,
                    self.record,
                )
                # the record cache fronts key-value stores (window stores are written through)
                cached = self.cache is not None and spec.caching
                self.stores[name] = (
                    CachingStore(view, self.cache, self.record)
                    if cached and self.cache is not None and isinstance(view, ChangeLoggingStore)
                    else view
                )
            for name in self.subtopology.nodes:
                node = self.topology.nodes[name]
                changes = not self.accepts_changes.isdisjoint(node.children)
                ctx = _NodeContext(self, name, list(node.children), changes)
                self._contexts[name] = ctx
                if isinstance(node, ProcessorNode):
                    processor = node.supplier()
                    processor.init(ctx)
                    self._processors[name] = processor
                elif isinstance(node, SinkNode):
                    self._sinks[name] = sink_plan(
                        self.topology.sink_target(node, self.application_id),
                        (node.key_serde, node.value_serde),
                        node.partitioner,
                        self.partition_counts,
                    )
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
        self._sinks.clear()
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
        extracted: int | None = None,
    ) -> None:
        """Run one input record through the sub-topology (depth first); ``extracted``: its
        timestamp as the PartitionGroup extracted it (None: extract it here). A record its
        handlers skip still counts as consumed; a FAIL raises :class:`RecordFailedError`
        before the offset is committed, so it is read again."""
        source = self._sources[topic]
        hdrs: Headers = tuple(headers) if headers else ()
        record = self.record
        record.topic, record.offset = topic, offset
        record.timestamp, record.headers = timestamp, hdrs
        source_partition = self._input_of[topic]
        self.processed[source_partition] = self.positions[source_partition] = offset + 1
        self._raw = (key, value, hdrs)
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
        extractor = source.timestamp_extractor or self.default_extractor
        partition_time = self.partition_time.get(topic, -1)
        if extracted is not None:  # the PartitionGroup extracted it when the record was a head
            ts = extracted
        elif extractor is fail_on_invalid_timestamp and timestamp >= 0:
            ts = timestamp  # what it returns, without building its argument per record
        else:
            part = self.task_id.partition
            ts = extractor(
                ConsumedRecord(topic, part, offset, timestamp, k, v, hdrs, partition_time)
            )
        if ts < 0:  # as Kafka Streams: a negative extracted timestamp drops the record
            logger.warning(
                "dropping a record with a negative timestamp",
                extra=fields(topic=topic, offset=offset, timestamp=ts),
            )
            self.dropped_records += 1
            return
        record.timestamp = ts
        if ts > partition_time:
            self.partition_time[topic] = ts
        if ts > self.stream_time:
            self.stream_time = ts
        self._contexts[source.name].forward(k, v)
        self.records_processed += 1
        if self.stream_time_punctuation:
            self.punctuate_stream_time()

    def head_extractor(self, topic: str) -> TimestampOf | None:
        """How its PartitionGroup extracts a head's timestamp (None: the record's own)."""
        source = self._sources[topic]
        extractor = source.timestamp_extractor or self.default_extractor
        return head_extractor(source, extractor, self.task_id.partition)

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
        processor = self._processors.get(node_name)
        if processor is None:
            self._send(node_name, key, value)
            return
        try:
            processor.process(key, value)
        except RecordFailedError:
            raise  # a descendant's handler already decided
        except Exception as exc:  # user code: the processing handler decides for this node
            context = self._error_context(Stage.PROCESSING, node_name)
            self.errors.handle(context, exc, self.collector)  # type: ignore[arg-type]

    def _send(self, node_name: str, key: Any, value: Any) -> None:
        """A sink: topic, partitions (sink_writer), bytes (errors: the production handler)."""
        target, key_serde, value_serde, chooser = self._sinks[node_name]
        record = self.record
        try:
            topic = target if isinstance(target, str) else target(key, value, record)
            partitions = None
            if chooser is not None:
                partitions = chooser.choose(topic, key, value)
                if not partitions:  # dropped by the partitioner (logged), not serialized
                    self.dropped_records += 1
                    return
            key_bytes = key_serde.serialize(key)
            value_bytes = value_serde.serialize(value)
        except Exception as exc:
            context = self._error_context(Stage.PRODUCTION, node_name)
            self.errors.handle(context, exc, self.collector)  # type: ignore[arg-type]
            return
        headers = list(record.headers) or None
        if partitions is None:  # no partitioner: the producer's (one check on the hot path)
            self.collector.send(topic, key_bytes, value_bytes, None, record.timestamp, headers)
            return
        for partition in partitions:
            self.collector.send(topic, key_bytes, value_bytes, partition, record.timestamp, headers)

    def punctuate(self, now_ms: int) -> int:
        """Run due wall-clock punctuators at ``now_ms`` (the thread's clock); returns how many
        ran. Stream-time punctuators run after each record (:meth:`punctuate_stream_time`)."""
        return self._punctuate(PunctuationType.WALL_CLOCK_TIME, now_ms)

    def punctuate_stream_time(self) -> int:
        """Run due stream-time punctuators (stream time advances only with records)."""
        if self.stream_time < 0 or not self.stream_time_punctuation:
            return 0
        return self._punctuate(PunctuationType.STREAM_TIME, self.stream_time)

    def _punctuate(self, kind: PunctuationType, now_ms: int) -> int:
        ran, record = 0, self.record
        for ctx in list(self._contexts.values()):
            for schedule in [s for s in ctx.schedules if s.kind is kind]:
                if not schedule.due(now_ms):
                    continue
                saved = (record.topic, record.offset, record.timestamp, record.headers)
                # Kafka's punctuation context: ts = that time, no topic/offset, empty headers
                record.topic, record.offset, record.timestamp, record.headers = "", -1, now_ms, ()
                try:
                    schedule.punctuator(now_ms)
                finally:
                    record.topic, record.offset, record.timestamp, record.headers = saved
                schedule.advance(now_ms)
                ran += 1
            ctx.schedules = [s for s in ctx.schedules if not s.cancelled]
        return ran

    # -- commit (see runtime.commit) -------------------------------------------------------
    def flush_cache(self) -> None:
        """Step 1 of a commit: cached updates go to the stores, changelogs and downstream."""
        for store in self.stores.values():
            if isinstance(store, CachingStore):
                store.flush_cache()

    def flush_state(self, delivered: dict[TopicPartition, int]) -> None:
        """Exactly-once, the transaction committed: the stores' data and changelog offsets."""
        self.state.flush(delivered)

    def write_state(self, delivered: dict[TopicPartition, int]) -> None:
        """At-least-once step 3: the stores' data; their offsets wait for :meth:`checkpoint`."""
        self.state.flush_data(delivered)

    def keep_delivered(self, delivered: dict[TopicPartition, int]) -> None:
        """Another task's commit flushed the producer: keep the ends this one reached."""
        self.state.remember_ends(delivered)

    def checkpoint(self) -> None:
        """At-least-once step 5 (the offsets are committed): the stores' changelog offsets."""
        self.state.checkpoint()

    def discard_uncommitted(self) -> None:
        """An abort or a migration: drop staged writes and uncommitted input offsets."""
        self.state.discard()
        self.processed = {}
        self.positions = {}  # the lag is unknown until the input is read again

    def take_offsets(self) -> dict[TopicPartition, int]:
        """Input offsets processed since the last commit (next offset to read)."""
        out, self.processed = self.processed, {}
        return out
