"""TopologyTestDriver: run an app's topology synchronously, with no broker and no disk.

It drives the runtime's own :class:`StreamTask` (one per sub-topology, partition 0, as Kafka's
driver runs everything as one partition) with an in-memory collector. As in Kafka's driver, a
piped record and the records the app writes to its own input topics (repartition, foreign-key
subscriptions) are buffered in one :class:`PartitionGroup` over every source topic and taken in
head-timestamp order while ``max.task.idle.ms`` allows (every topic counts as caught up, so
with a positive value a task waits for the wall clock); records to other topics are kept for
:class:`TestOutputTopic`. After each processed record the driver commits (stores flush), so
every update is visible downstream and in stores. Stream time advances with input timestamps;
wall-clock punctuation only through :meth:`advance_wall_clock_time`.
Stores are in memory unless the config asks for ``default.dsl.store=rocksDB`` (then a temporary
state directory is used and removed on :meth:`close`).
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamrt.clock import ManualClock
from streamrt.errors import ConfigError
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.dsl import StreamsBuilder
from streamrt.runtime.engine.tasks.partition_group import PartitionGroup
from streamrt.runtime.engine.tasks.sink_writer import fixed_counts
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId
from streamrt.runtime.graph.global_tables import GlobalStore
from streamrt.runtime.graph.topology import SourceNode, SubTopology, Topology
from streamrt.runtime.instance.app import App
from streamrt.serde import Serde, SerdeLike, bind_serde, serde_for
from streamrt.state.store import IN_MEMORY, ROCKS_DB

__all__ = ("TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver")

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class TestRecord:
    """A record as piped in or read out (Kafka's ``TestRecord``)."""

    __test__ = False  # not a pytest test class

    key: Any
    value: Any
    timestamp: int = 0
    headers: Headers = ()


@dataclass(frozen=True, slots=True)
class _Fetched:
    """A record buffered for a task, as a consumer would have fetched it."""

    topic: str
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass(slots=True)
class _Raw:
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


class _Collector:
    """The tasks' record collector: everything sent, in order, until the driver takes it."""

    def __init__(self) -> None:
        self.sent: deque[tuple[str, _Raw]] = deque()

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        del partition  # one partition: a record multicast to n partitions is read n times
        self.sent.append((topic, _Raw(key, value, timestamp_ms, tuple(headers or ()))))


class TopologyTestDriver:
    """``TopologyTestDriver(app)`` or ``(builder_or_topology, config)``; close when done."""

    __test__ = False

    def __init__(
        self,
        app: App | StreamsBuilder | Topology,
        config: Mapping[str, Any] | None = None,
        *,
        initial_wall_clock_ms: int = 0,
    ) -> None:
        if isinstance(app, App):
            topology, settings = app.topology, {**app.settings, **(config or {})}
        elif isinstance(app, StreamsBuilder):
            topology, settings = app.topology, dict(config or {})
        else:
            topology, settings = app, dict(config or {})
        settings.setdefault("application.id", "test-driver")
        settings.setdefault("default.dsl.store", IN_MEMORY)
        settings.pop("bootstrap.servers", None)
        streams = {k: v for k, v in settings.items() if not k.startswith("rest.")}
        self.config = StreamsConfig.from_mapping(streams)
        self.topology = topology
        self.clock = ManualClock(initial_wall_clock_ms)
        self._collector = _Collector()
        self._outputs: dict[str, deque[_Raw]] = {}
        self._offsets: dict[str, int] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        app_id = self.config.application_id
        subs = topology.subtopologies(app_id)
        persistent = self.config.default_dsl_store == ROCKS_DB or any(
            topology.stores[s].kind == ROCKS_DB for sub in subs for s in sub.stores
        )
        if persistent:
            self._tmp = tempfile.TemporaryDirectory(prefix="streamrt-driver-")
            state_dir = Path(self._tmp.name)
        else:
            state_dir = Path(self.config.state_dir)  # never touched: no lock, no store on disk
        self._internal = set(topology.repartition_topics(app_id))
        self._tasks: list[StreamTask] = []
        self._by_topic: dict[str, StreamTask] = {}
        self._open_tasks(subs, state_dir, persistent)
        # Kafka's driver has one task, so one PartitionGroup, over all its source topics
        self._group = PartitionGroup(
            {t: task.head_extractor(t) for t, task in self._by_topic.items()},
            self.config.max_task_idle_ms,
        )
        for topic in self._by_topic:
            self._group.set_lag(topic, 0)  # as Kafka's MockConsumer: always caught up
        self._globals: dict[str, GlobalStore] = {}
        for spec in topology.global_tables.values():
            self._globals[spec.topic] = spec.bind()
        self._changelog_suffix = "-changelog"
        self._app_id = app_id

    def _open_tasks(self, subs: list[SubTopology], state_dir: Path, persistent: bool) -> None:
        """One task per sub-topology, partition 0, as Kafka's driver runs them."""
        for sub in subs:
            task = StreamTask(
                TaskId(sub.id, 0),
                sub,
                self.topology,
                self.config.application_id,
                state_dir,
                self._collector,
                default_store=self.config.default_dsl_store,
                errors=self.config.error_handlers(),
                timestamp_extractor=self.config.timestamp_extractor(),
                clock=self.clock,
                lock_state=persistent,
                # as Kafka's driver: every topic has one partition, partition numbers unchecked
                partition_counts=fixed_counts(1, checks_range=False),
            )
            task.open()
            self._tasks.append(task)
            for topic in sub.source_topics:
                self._by_topic[topic] = task

    # -- topics ------------------------------------------------------------------------------

    def create_input_topic(
        self,
        topic: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        start_timestamp: int = 0,
        auto_advance_ms: int = 0,
    ) -> TestInputTopic:
        if topic not in self._by_topic and topic not in self._globals:
            known = sorted({*self._by_topic, *self._globals} - self._internal)
            raise ConfigError(f"unknown input topic {topic!r}; the topology reads {known}")
        return TestInputTopic(
            self,
            topic,
            bind_serde(serde_for(key_serde), topic, is_key=True),
            bind_serde(serde_for(value_serde), topic, is_key=False),
            start_timestamp,
            auto_advance_ms,
        )

    def create_output_topic(
        self, topic: str, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> TestOutputTopic:
        key = bind_serde(serde_for(key_serde), topic, is_key=True)
        return TestOutputTopic(
            self, topic, key, bind_serde(serde_for(value_serde), topic, is_key=False)
        )

    def produced_topic_names(self) -> list[str]:
        return sorted(self._outputs)

    # -- processing --------------------------------------------------------------------------

    def pipe_raw(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers = (),
    ) -> None:
        """Buffer one serialized record, then process everything that may be processed."""
        if topic in self._globals:
            self._globals[topic].apply(key, value)
            self._drain()
            self._commit()
        else:
            self._enqueue(topic, key, value, timestamp, headers)
            self._complete_processable_work()

    def _enqueue(
        self, topic: str, key: bytes | None, value: bytes | None, ts: int, headers: Headers
    ) -> None:
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        self._group.add(topic, [_Fetched(topic, offset, ts, key, value, headers)])

    def _complete_processable_work(self) -> None:
        """Kafka's ``completeAllProcessableWork``: take records in PartitionGroup order while
        the group may process, committing and collecting what each one wrote."""
        self._drain()
        now = self.clock.now_ms()
        while self._group.ready(now):
            taken = self._group.next_record()
            if taken is None:
                break
            _, r, ts = taken
            self._by_topic[r.topic].process(
                r.topic, r.offset, r.timestamp, r.key, r.value, r.headers, ts
            )
            self._commit()
            self._drain()

    def _drain(self) -> None:
        """What the tasks wrote: outputs kept, the app's own input topics buffered again."""
        sent = self._collector.sent
        while sent:
            topic, raw = sent.popleft()
            if topic.startswith(f"{self._app_id}-") and topic.endswith(self._changelog_suffix):
                continue  # changelogs only matter for restoration, which is not simulated
            if topic in self._globals:
                self._globals[topic].apply(raw.key, raw.value)
            if topic not in self._internal:
                self._outputs.setdefault(topic, deque()).append(raw)
            if topic in self._by_topic:  # internal topics, and outputs the app reads again
                self._enqueue(topic, raw.key, raw.value, raw.timestamp, raw.headers)

    def _commit(self) -> None:
        for task in self._tasks:
            task.flush_state({})
            task.take_offsets()

    def advance_wall_clock_time(self, ms: int) -> None:
        """Move the wall clock; due wall-clock punctuators run, then a commit."""
        if ms < 0:
            raise ValueError("wall-clock time cannot go back")
        now = self.clock.advance(ms)
        for task in self._tasks:
            task.punctuate(now)
        self._commit()
        self._complete_processable_work()

    # -- stores ------------------------------------------------------------------------------

    def get_state_store(self, name: str) -> Any:
        """The store view processors see (reads include this record's writes)."""
        for spec in self.topology.global_tables.values():
            if spec.name == name:
                return spec.require()
        for task in self._tasks:
            if name in task.stores:
                return task.stores[name]
        raise KeyError(f"no state store {name!r} in this topology")

    get_key_value_store = get_state_store
    get_window_store = get_state_store
    get_session_store = get_state_store

    def stream_time(self, store_or_topic: str | None = None) -> int:
        """The largest stream time of the tasks (-1 before any record)."""
        return max((t.stream_time for t in self._tasks), default=-1)

    def close(self) -> None:
        for task in self._tasks:
            task.close()
        self._tasks.clear()
        for spec in self.topology.global_tables.values():
            spec.store = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def output_queue(self, topic: str) -> deque[_Raw]:
        """The records written to ``topic`` and not read yet, oldest first (what a
        :class:`TestOutputTopic` consumes from)."""
        return self._outputs.setdefault(topic, deque())

    def _source(self, topic: str) -> SourceNode | None:
        for node in self.topology.nodes.values():
            if isinstance(node, SourceNode) and self.topology.topic_of(node, self._app_id) == topic:
                return node
        return None


@dataclass(eq=False)  # a handle: identity, as before
class TestInputTopic:
    """Pipe records into one input topic; without a timestamp, the topic's own time is used
    (``current_time``, from ``start_timestamp``, advanced by ``auto_advance_ms`` after each
    record)."""

    __test__ = False

    driver: TopologyTestDriver
    topic: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    current_time: int
    auto_advance_ms: int

    def pipe_input(
        self,
        key: Any,
        value: Any,
        timestamp: int | None = None,
        headers: Iterable[tuple[str, bytes]] = (),
    ) -> None:
        if timestamp is None:
            timestamp = self.current_time
            self.current_time += self.auto_advance_ms
        self.driver.pipe_raw(
            self.topic,
            self.key_serde.serialize(key),
            self.value_serde.serialize(value),
            timestamp,
            tuple(headers),
        )

    def pipe_value(self, value: Any, timestamp: int | None = None) -> None:
        self.pipe_input(None, value, timestamp)

    def pipe_record_list(self, records: Iterable[TestRecord | tuple[Any, ...]]) -> None:
        """``TestRecord``s, or tuples ``(key, value)`` / ``(key, value, timestamp)``."""
        for r in records:
            if isinstance(r, TestRecord):
                self.pipe_input(r.key, r.value, r.timestamp, r.headers)
            else:
                self.pipe_input(*r)

    pipe_key_value_list = pipe_record_list

    def advance_time(self, ms: int) -> None:
        self.current_time += ms


@dataclass(eq=False)
class TestOutputTopic:
    """Read what the topology wrote to one topic, oldest first; reading consumes."""

    __test__ = False

    driver: TopologyTestDriver
    topic: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]

    def read_record(self) -> TestRecord:
        queue = self.driver.output_queue(self.topic)
        if not queue:
            raise IndexError(f"no more records in output topic {self.topic!r}")
        raw = queue.popleft()
        return TestRecord(
            self.key_serde.deserialize(raw.key),
            self.value_serde.deserialize(raw.value),
            raw.timestamp,
            raw.headers,
        )

    def read_key_value(self) -> tuple[Any, Any]:
        r = self.read_record()
        return r.key, r.value

    def read_value(self) -> Any:
        return self.read_record().value

    def read_records_to_list(self) -> list[TestRecord]:
        out = []
        while not self.is_empty():
            out.append(self.read_record())
        return out

    def read_key_values_to_list(self) -> list[tuple[Any, Any]]:
        return [(r.key, r.value) for r in self.read_records_to_list()]

    def read_values_to_list(self) -> list[Any]:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """The latest value per key (a ``None`` value removes the key, as a table would)."""
        out: dict[Any, Any] = {}
        for k, v in self.read_key_values_to_list():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
        return out

    @property
    def queue_size(self) -> int:
        return len(self.driver.output_queue(self.topic))

    def is_empty(self) -> bool:
        return self.queue_size == 0
