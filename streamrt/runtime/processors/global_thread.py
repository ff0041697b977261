"""The global thread: keeps every global store of an app current (Kafka's GlobalStreamThread).

Every instance reads *all* partitions of each global table's topic into its own store: at start
it restores from the beginning to the end offsets before any stream thread runs (so a join never
sees a half-loaded table), then the thread keeps applying new records. The source topic is the
changelog; the store is in memory and restored at each start (Kafka Streams' global store with
``reprocessOnRestore=false``).
"""

from __future__ import annotations

import asyncio
import logging
import threading

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.errors import ConfigError, StreamrtError
from streamrt.logs import fields
from streamrt.runtime.graph.global_tables import GlobalTableSpec

__all__ = ("GlobalStreamThread",)

logger = logging.getLogger(__name__)


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
