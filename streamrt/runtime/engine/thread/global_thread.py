"""The global thread: keeps every global store of an app current (Kafka's GlobalStreamThread).

Every instance reads *all* partitions of each global table's topic into its own store: at start
it restores from the beginning to the end offsets before any stream thread runs (so a join never
sees a half-loaded table), then the thread keeps applying new records. The source topic is the
changelog; the store is in memory and restored at each start (Kafka Streams' global store with
``reprocessOnRestore=false``).

The consumer is the stream threads' librdkafka restore consumer (a restore that never ends),
with the ``global.consumer.`` settings as Kafka Streams names them; streamrt's admin client
finds the topics' partitions and their end offsets (the last stable offset under
exactly_once_v2, whose consumers all read committed data only, as Kafka Streams' do).
"""

from __future__ import annotations

import asyncio
import logging
import threading

from streamrt.admin.client import LATEST, AdminClient
from streamrt.errors import ConfigError, StreamrtError
from streamrt.logs import fields
from streamrt.runtime import client_settings
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.bootstrap import started_admin
from streamrt.runtime.engine.clients.rdkafka_restore import (
    LibrdkafkaRestoreConsumer,
    librdkafka_restore_config,
)
from streamrt.runtime.graph.global_tables import GlobalTableSpec
from streamrt.topic_partition import TopicPartition

__all__ = ("GlobalStreamThread",)

logger = logging.getLogger(__name__)

_TOPICS_WAIT_S = 30.0


class GlobalStreamThread:
    """One OS thread and consumer (no group) keeping every global store of the app current."""

    def __init__(self, config: StreamsConfig, client_id: str, specs: list[GlobalTableSpec]) -> None:
        self.config = config
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
        while not self.restored.wait(0.05):
            if self.error is not None or not self._thread.is_alive():
                self.stop()
                raise StreamrtError(f"global thread failed while restoring: {self.error!r}")
            timeout -= 0.05
            if timeout <= 0:
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
        by_topic = {spec.topic: spec.require() for spec in self.specs}
        rd_config, max_records = librdkafka_restore_config(
            self.config.client_config(),
            f"{self.client_id}-global-consumer",
            self.config.application_id,
            self.config.exactly_once,
            role="global.consumer",
        )
        read_committed = rd_config["isolation.level"] == "read_committed"
        ends = await self._partitions_and_ends(sorted(by_topic), read_committed)
        consumer = LibrdkafkaRestoreConsumer(rd_config, max_records)
        await consumer.start()
        try:
            await consumer.assign_at(dict.fromkeys(ends))  # each at its log start
            restoring = {tp for tp, end in ends.items() if end > 0}
            if not restoring:
                self.restored.set()
            while not self._stop.is_set():
                for tp, batch in (await consumer.fetch(timeout_ms=100)).items():
                    store = by_topic[tp.topic]
                    for key, value, _timestamp in batch.rows:
                        store.apply(key, value)
                if restoring:
                    for tp in list(restoring):
                        position = await consumer.position(tp)
                        if position is not None and position >= ends[tp]:
                            restoring.discard(tp)
                    if not restoring:
                        logger.info(
                            "global tables restored",
                            extra=fields(tables=[s.name for s in self.specs]),
                        )
                        self.restored.set()
        finally:
            await consumer.stop()

    async def _partitions_and_ends(
        self, topics: list[str], read_committed: bool
    ) -> dict[TopicPartition, int]:
        """Every partition of the global topics with its end offset (the consumer's: the last
        stable offset when it reads committed data only); waits up to 30 s for missing topics
        (listed, never named: naming one could auto-create it)."""
        admin = await started_admin(
            lambda: client_settings.admin_client(
                self.config.client_config(), f"{self.client_id}-global-admin"
            )
        )
        try:
            counts = await self._partition_counts(admin, topics)
            tps = [(t, p) for t, n in counts.items() for p in range(n)]
            ends = await admin.list_offsets(tps, LATEST, read_committed=read_committed)
            return {TopicPartition(t, p): end for (t, p), end in ends.items()}
        finally:
            await admin.close()

    async def _partition_counts(self, admin: AdminClient, topics: list[str]) -> dict[str, int]:
        missing = topics
        for _ in range(int(_TOPICS_WAIT_S / 0.5)):
            listed = await admin.list_topics()
            missing = [t for t in topics if t not in listed]
            if not missing:
                return {t: len(listed[t].partitions) for t in topics}
            if self._stop.is_set():
                break
            await asyncio.sleep(0.5)
        raise ConfigError(f"global table topics do not exist: {', '.join(missing)}")
