"""GlobalKTable: a table fully replicated to every instance, and the KStream-GlobalKTable join.

Every instance reads *all* partitions of the table's topic into its own global store: at start
it restores from the beginning to the end offsets before any stream thread runs (so a join never
sees a half-loaded table), then one global thread keeps applying new records. The source topic is
the changelog; the store is in memory and restored at each start (Kafka Streams' global store
with ``reprocessOnRestore=false``). No co-partitioning is needed: the join looks up any key.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.errors import ConfigError, StreamrtError
from streamrt.logs import fields
from streamrt.runtime.processor import Processor
from streamrt.serde import Serde

__all__ = (
    "GlobalKTable",
    "GlobalStore",
    "GlobalStreamThread",
    "GlobalTableSpec",
    "stream_global_join",
)

KStream = Any  # runtime.dsl.KStream: not imported, as runtime.dsl imports this module

logger = logging.getLogger(__name__)


class GlobalStore:
    """The typed, read-only view stream tasks and queries see; written by the global thread.

    Single writer (the global thread or the test driver); readers on other threads see whole
    values, as dict operations are atomic.
    """

    def __init__(self, name: str, key_serde: Serde[Any], value_serde: Serde[Any]) -> None:
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._data: dict[bytes, bytes] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """One record of the topic: a value upserts, a tombstone deletes, a null key is skipped."""
        if key is None:
            return
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = value

    def get(self, key: Any) -> Any:
        kb = self.key_serde.serialize(key)
        raw = None if kb is None else self._data.get(bytes(kb))
        return None if raw is None else self.value_serde.deserialize(raw)

    def items(self) -> list[tuple[Any, Any]]:
        return [
            (self.key_serde.deserialize(k), self.value_serde.deserialize(v))
            for k, v in sorted(self._data.items())
        ]

    def __len__(self) -> int:
        return len(self._data)


@dataclass(slots=True)
class GlobalTableSpec:
    """A global table of the topology; ``store`` is set when an app or test driver runs it."""

    name: str
    topic: str
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    store: GlobalStore | None = field(default=None)

    def bind(self) -> GlobalStore:
        self.store = GlobalStore(self.name, self.key_serde, self.value_serde)
        return self.store

    def require(self) -> GlobalStore:
        if self.store is None:
            raise StreamrtError(f"global table {self.name} is not running (app not started)")
        return self.store


class GlobalKTable:
    """The DSL handle of a global table: join a stream with it, query it by store name."""

    def __init__(self, spec: GlobalTableSpec) -> None:
        self.spec = spec

    @property
    def store(self) -> str:
        return self.spec.name


class StreamGlobalJoinProcessor(Processor):
    """``key_mapper(key, value)`` picks the table key; the result keeps the stream's key/ts."""

    def __init__(
        self,
        spec: GlobalTableSpec,
        key_mapper: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any], Any],
        left: bool,
    ) -> None:
        self.spec = spec
        self.key_mapper = key_mapper
        self.joiner = joiner
        self.left = left

    def process(self, key: Any, value: Any) -> None:
        if value is None:
            return
        table_key = self.key_mapper(key, value)
        other = None if table_key is None else self.spec.require().get(table_key)
        if other is None and not self.left:
            return
        self.context.forward(key, self.joiner(value, other))


def stream_global_join(
    stream: KStream,
    table: GlobalKTable,
    key_mapper: Callable[[Any, Any], Any],
    joiner: Callable[[Any, Any], Any],
    left: bool,
) -> KStream:
    """Never repartitions: every instance holds the whole table."""
    topology = stream.topology
    spec = table.spec
    node = topology.add_processor(
        topology.new_name("KSTREAM-LEFTJOIN-GLOBAL" if left else "KSTREAM-JOIN-GLOBAL"),
        lambda: StreamGlobalJoinProcessor(spec, key_mapper, joiner, left),
        stream.node,
    )
    return type(stream)(topology, node, stream.key_serde, stream.value_serde, stream.key_changed)


def add_global_table(
    topology: Any, topic: str, store: str, key_serde: Serde[Any], value_serde: Serde[Any]
) -> GlobalKTable:
    from streamrt.runtime.topology import SourceNode

    if store in topology.global_tables or store in topology.stores:
        raise ConfigError(f"state store {store!r} is defined twice")
    for node in topology.nodes.values():
        if isinstance(node, SourceNode) and not node.internal and node.topic == topic:
            raise ConfigError(f"topic {topic!r} is already a source of this topology")
    spec = GlobalTableSpec(store, topic, key_serde, value_serde)
    topology.global_tables[store] = spec
    return GlobalKTable(spec)


class GlobalStreamThread:
    """One OS thread and consumer (no group) keeping every global store of the app current."""

    def __init__(
        self, bootstrap_servers: str, client_id: str, specs: list[GlobalTableSpec]
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.client_id = client_id
        self.specs = specs
        self.error: BaseException | None = None
        self.restored = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{client_id}-global", daemon=True)

    def start(self, timeout: float = 60.0) -> None:
        """Start and block until every global store holds its topic up to the end offsets."""
        for spec in self.specs:
            spec.bind()
        self._thread.start()
        deadline = threading.Event()
        while not self.restored.wait(0.05):
            if self.error is not None or not self._thread.is_alive():
                self.stop()
                raise StreamrtError(f"global thread failed while restoring: {self.error!r}")
            timeout -= 0.05
            if timeout <= 0 or deadline.is_set():
                self.stop()
                raise StreamrtError("global tables were not restored in time")

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self.error = exc
            logger.error("global thread died", exc_info=True, extra=fields(error=repr(exc)))

    async def _main(self) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap_servers,
            client_id=f"{self.client_id}-global-consumer",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            by_topic = {spec.topic: spec.require() for spec in self.specs}
            counts = await self._partition_counts(list(by_topic))
            tps = [KafkaTP(topic, p) for topic, n in counts.items() for p in range(n)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            restoring = {tp for tp in tps if ends[tp] > 0}
            if not restoring:
                self.restored.set()
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=100, max_records=5000)
                for tp, records in batches.items():
                    store = by_topic[tp.topic]
                    for r in records:
                        store.apply(r.key, r.value)
                if restoring:
                    for tp in list(restoring):
                        if await consumer.position(tp) >= ends[tp]:
                            restoring.discard(tp)
                    if not restoring:
                        logger.info(
                            "global tables restored",
                            extra=fields(tables=[s.name for s in self.specs]),
                        )
                        self.restored.set()
        finally:
            await consumer.stop()

    async def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        """Every global topic's partition count; waits up to 30 s for missing topics."""
        admin = AIOKafkaAdminClient(
            bootstrap_servers=self.bootstrap_servers, client_id=f"{self.client_id}-global-admin"
        )
        await admin.start()
        try:
            missing = topics
            for _ in range(60):
                missing = sorted(set(topics) - set(await admin.list_topics()))
                if not missing:
                    described = await admin.describe_topics(topics)
                    return {t["topic"]: len(t["partitions"]) for t in described}
                if self._stop.is_set():
                    break
                await asyncio.sleep(0.5)
            raise ConfigError(f"global table topics do not exist: {', '.join(missing)}")
        finally:
            await admin.close()
