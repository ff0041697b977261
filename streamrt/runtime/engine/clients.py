"""A stream thread's Kafka clients: how each is built, warmed up and closed.

Every thread has a producer (transactional under exactly_once_v2: one per thread, with a
transactional id stable under static membership), a group consumer, a restore consumer (shared
by restoration and standbys; librdkafka's whenever the main consumer is, aiokafka's otherwise:
:mod:`.restore_consumer`), an offsets consumer and, with repartition topics, an admin client
for purging them.

The offsets consumer only lists changelog end offsets and never fetches. A broker answers one
request per connection at a time, in order, so a ListOffsets sent on the restore consumer's
connection waits behind the standbys' long-poll Fetch (up to ``fetch.max.wait.ms``, 500 ms, when
their changelogs are idle, as they are once the active owner is gone): the restore check of a
promoted standby, and the ends refresh before each join, waited for it. It stays aiokafka's on
every data path: one ListOffsets for all of a task's changelogs (librdkafka's
``get_watermark_offsets`` asks per partition), the last stable offset under read_committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.logs import fields
from streamrt.runtime import client_settings
from streamrt.runtime.config import LIBRDKAFKA
from streamrt.runtime.engine import kafka_adapter
from streamrt.runtime.engine.assignor import StreamsPartitionAssignor
from streamrt.runtime.engine.bootstrap import retry_bootstrap
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.eos import TRANSACTION_TIMEOUT_MS
from streamrt.runtime.engine.main_consumer import MainConsumer
from streamrt.runtime.engine.purge import RepartitionPurger
from streamrt.runtime.engine.rdkafka_consumer import LibrdkafkaConsumer, librdkafka_consumer_config
from streamrt.runtime.engine.rdkafka_producer import LibrdkafkaProducer, librdkafka_config
from streamrt.runtime.engine.rdkafka_restore import (
    LibrdkafkaRestoreConsumer,
    librdkafka_restore_config,
)
from streamrt.runtime.engine.restore_consumer import AiokafkaRestoreConsumer, RestoreConsumer
from streamrt.runtime.engine.zero_timestamp import ZeroTimestampSender
from streamrt.runtime.graph.topology import changelog_topic

__all__ = ("ClientFactory", "Producer", "ThreadClients")

#: A thread's producer: librdkafka's (the default under at_least_once) or aiokafka's;
#: transactional under exactly_once_v2 (aiokafka's by default, librdkafka's when asked for,
#: own membership only).
Producer: TypeAlias = AIOKafkaProducer | LibrdkafkaProducer

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ThreadClients:
    """One thread's clients, as built (the exactly-once committer may renew the producer)."""

    producer: Producer
    consumer: MainConsumer  # aiokafka's (group member or manual) or librdkafka's (manual)
    restore_consumer: RestoreConsumer  # librdkafka's with the librdkafka main consumer
    offsets_consumer: AIOKafkaConsumer  # ListOffsets only, on a connection no Fetch holds
    purger: RepartitionPurger | None

    async def start(self, *, producer: bool) -> bool:
        """Start the producer (unless it waits: exactly_once_v2), the restore and offsets
        consumers; a broker that is not reachable yet (restarting with us) is waited for.
        True if the producer was started or connected (it needs a stop)."""
        opened = producer
        if producer:
            await retry_bootstrap(self.producer.start, "producer")
        else:  # exactly_once_v2: connected now, InitProducerId once released (start_ahead.py)
            from streamrt.runtime.engine.rdkafka_txn import TransactionalLibrdkafkaProducer

            if isinstance(self.producer, TransactionalLibrdkafkaProducer):
                await self.producer.connect()
                opened = True
        await retry_bootstrap(self.restore_consumer.start, "restore consumer")
        await retry_bootstrap(self.offsets_consumer.start, "offsets consumer")
        return opened

    async def close_consumers(self, fenced_ok: bool, thread_name: str) -> None:
        """A static member sends no LeaveGroup on stop: aiokafka skips it when
        group_instance_id is set, so the coordinator keeps our partitions for us. After a
        hand-off the successor may already have fenced our member: with ``fenced_ok`` (the
        thread was asked to stop) that is not an error."""
        try:
            if isinstance(self.consumer, AIOKafkaConsumer):
                await kafka_adapter.stop_consumer(self.consumer, f"{thread_name} consumer")
            else:
                await self.consumer.stop()
        except Exception as exc:
            if not (fenced_ok and kafka_adapter.is_fenced(exc)):
                raise
            logger.info(
                "consumer fenced by the successor while closing", extra=fields(thread=thread_name)
            )
        await self.restore_consumer.stop()
        await kafka_adapter.stop_consumer(self.offsets_consumer, f"{thread_name} offsets consumer")


@dataclass(frozen=True, slots=True)
class ClientFactory:
    """Builds one thread's clients from the config's client settings."""

    env: ThreadEnv
    client_id: str
    group_instance_id: str | None  # static membership
    transactional_id: str | None  # exactly_once_v2
    group_metadata: Callable[[], kafka_adapter.GroupMetadata]  # the member's, for the txn

    def build(self, assignor: StreamsPartitionAssignor, manual: bool = False) -> ThreadClients:
        """``manual``: streamrt's own member keeps the group; the consumer only fetches."""
        return ThreadClients(
            self.thread_producer(),
            self.manual_consumer() if manual else self.consumer(assignor),
            self.restore_consumer(),
            self.offsets_consumer(),
            self.purger(),
        )

    def thread_producer(self) -> Producer:
        """The producer the config resolves (``StreamsConfig.effective_thread_producer``);
        transactional under exactly_once_v2 (librdkafka's only with streamrt's own membership:
        StreamsConfig refuses the rest)."""
        if self.env.config.effective_thread_producer != LIBRDKAFKA:
            return self.producer()
        clients = self.env.config.client_config()
        client_id = f"{self.client_id}-producer"
        config = librdkafka_config(clients, client_id)
        if self.transactional_id is None:
            # records at timestamp 0, which librdkafka would stamp "now": aiokafka's producer
            # with the same settings, built on first use (engine/zero_timestamp.py). Not under
            # exactly_once_v2: that producer would not be in the transaction.
            at_zero = ZeroTimestampSender(
                lambda: AIOKafkaProducer(**client_settings.producer_kwargs(clients, client_id))
            )
            # no stores, no changelog offsets to checkpoint: only failed deliveries reported
            stores = any(sub.stores for sub in self.env.subtopologies)
            return LibrdkafkaProducer(config, at_zero, delivered_offsets=stores)
        # imported here, as before the default change (rdkafka_txn loads confluent-kafka)
        from streamrt.runtime.engine.rdkafka_txn import (
            TransactionalLibrdkafkaProducer,
            transactional_config,
        )

        config = transactional_config(config, self.transactional_id)
        return TransactionalLibrdkafkaProducer(config, self.group_metadata)

    def producer(self) -> AIOKafkaProducer:
        """The thread's producer; transactional (one per thread) under exactly_once_v2."""
        txn: dict[str, Any] = {}
        if self.transactional_id is not None:
            txn = {
                "transactional_id": self.transactional_id,
                "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
            }
        clients = self.env.config.client_config()
        producer = AIOKafkaProducer(
            **client_settings.producer_kwargs(clients, f"{self.client_id}-producer"), **txn
        )
        if self.transactional_id is not None:
            kafka_adapter.install_group_metadata_offsets(producer, self.group_metadata)
        return producer

    def consumer(self, assignor: StreamsPartitionAssignor) -> AIOKafkaConsumer:
        """The group member: ``application.id`` is the group, the assignor places tasks."""
        cfg = self.env.config
        kwargs = client_settings.consumer_kwargs(
            cfg.client_config(), "main.consumer", self.client_id
        )
        return AIOKafkaConsumer(
            **self._isolation(kwargs),
            group_id=cfg.application_id,
            group_instance_id=self.group_instance_id,
            session_timeout_ms=cfg.session_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            max_poll_interval_ms=cfg.max_poll_interval_ms,
            rebalance_timeout_ms=max(cfg.session_timeout_ms, 10_000),
            partition_assignment_strategy=(assignor,),
        )

    def manual_consumer(self) -> MainConsumer:
        """``stream.thread.membership=streamrt``: the main consumer's settings, no group (the
        member assigns it its partitions); librdkafka's with ``stream.thread.consumer``."""
        cfg = self.env.config
        if cfg.effective_thread_consumer == LIBRDKAFKA:
            config, max_records = librdkafka_consumer_config(
                cfg.client_config(),
                self.client_id,
                cfg.application_id,
                read_committed=self.transactional_id is not None,
            )
            return LibrdkafkaConsumer(config, max_records)
        kwargs = client_settings.consumer_kwargs(
            self.env.config.client_config(), "main.consumer", self.client_id
        )
        consumer: MainConsumer = AIOKafkaConsumer(**self._isolation(kwargs))
        return consumer

    def restore_consumer(self) -> RestoreConsumer:
        """No group: restoration and standbys assign changelog partitions themselves.
        librdkafka's when the main consumer is (``effective_thread_consumer``)."""
        cfg = self.env.config
        client_id = f"{self.client_id}-restore"
        if cfg.effective_thread_consumer == LIBRDKAFKA:
            config, max_records = librdkafka_restore_config(
                cfg.client_config(),
                client_id,
                cfg.application_id,
                read_committed=self.transactional_id is not None,
            )
            return LibrdkafkaRestoreConsumer(config, max_records)
        kwargs = client_settings.consumer_kwargs(cfg.client_config(), "restore.consumer", client_id)
        return AiokafkaRestoreConsumer(AIOKafkaConsumer(**self._isolation(kwargs)))

    def offsets_consumer(self) -> AIOKafkaConsumer:
        """Lists end offsets only: the restore consumer's settings, on its own connection."""
        kwargs = client_settings.consumer_kwargs(
            self.env.config.client_config(), "restore.consumer", f"{self.client_id}-offsets"
        )
        return AIOKafkaConsumer(**self._isolation(kwargs))

    def _isolation(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Under exactly_once_v2 every consumer reads committed data only (Kafka Streams too)."""
        if self.transactional_id is not None:
            kwargs["isolation_level"] = "read_committed"
        return kwargs

    def purger(self) -> RepartitionPurger | None:
        """Deletes consumed repartition records after commits (None: no repartition topic)."""
        cfg = self.env.config
        topics = self.env.topology.repartition_topics(cfg.application_id)
        if not topics:
            return None
        kwargs = client_settings.admin_kwargs(cfg.client_config(), f"{self.client_id}-purge")
        return RepartitionPurger(
            topics,
            lambda: AIOKafkaAdminClient(**kwargs),
            self.env.clock,
            cfg.repartition_purge_interval_ms,
        )

    async def warm_offsets_consumer(self, offsets_consumer: AIOKafkaConsumer) -> None:
        """Held: ask the changelogs' end offsets once, so the metadata and the connections
        the restore check needs after the join are there already (best effort)."""
        app_id = self.env.config.application_id
        stores = {name for sub in self.env.subtopologies for name in sub.stores}
        tps = [KafkaTP(changelog_topic(app_id, name), 0) for name in sorted(stores)]
        if not tps:
            return
        try:
            await asyncio.wait_for(offsets_consumer.end_offsets(tps), 5.0)
        except Exception as exc:  # e.g. a store whose changelog is its source topic
            logger.debug("restore consumer warm-up", extra=fields(error=repr(exc)))
