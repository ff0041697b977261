"""A stream thread's Kafka clients: how each is built, warmed up and closed.

Every thread has a librdkafka producer (transactional under exactly_once_v2: one per thread,
with a transactional id stable under static membership), a librdkafka main consumer that only
fetches (streamrt's own member keeps the group and assigns it its partitions), a librdkafka
restore consumer (shared by restoration and standbys), an offsets consumer and, with
repartition topics, an admin client for purging them.

The offsets consumer only lists changelog end offsets and never fetches. A broker answers one
request per connection at a time, in order, so a ListOffsets sent on the restore consumer's
connection waits behind the standbys' long-poll Fetch (up to ``fetch.max.wait.ms``, 500 ms, when
their changelogs are idle, as they are once the active owner is gone): the restore check of a
promoted standby, and the ends refresh before each join, waited for it. It is streamrt's
admin client (as Kafka Streams' changelog reader lists offsets with its admin client): one
ListOffsets per leader for all of a task's changelogs (librdkafka's ``get_watermark_offsets``
asks per partition), the last stable offset under read_committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer

from streamrt.admin.client import AdminClient
from streamrt.logs import fields
from streamrt.runtime import client_settings
from streamrt.runtime.engine.clients.bootstrap import retry_bootstrap
from streamrt.runtime.engine.clients.end_offsets import OffsetsConsumer
from streamrt.runtime.engine.clients.purge import RepartitionPurger
from streamrt.runtime.engine.clients.rdkafka_consumer import (
    LibrdkafkaConsumer,
    librdkafka_consumer_config,
)
from streamrt.runtime.engine.clients.rdkafka_producer import LibrdkafkaProducer, librdkafka_config
from streamrt.runtime.engine.clients.rdkafka_restore import (
    LibrdkafkaRestoreConsumer,
    librdkafka_restore_config,
)
from streamrt.runtime.engine.clients.rdkafka_txn import (
    GroupMetadata,
    TransactionalLibrdkafkaProducer,
    is_fenced,
    transactional_config,
)
from streamrt.runtime.engine.clients.txn_settle import settle_open_transaction
from streamrt.runtime.engine.clients.zero_timestamp import ZeroTimestampSender
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.eos import TRANSACTION_TIMEOUT_MS
from streamrt.runtime.engine.main_consumer import MainConsumer
from streamrt.runtime.engine.restore_consumer import RestoreConsumer
from streamrt.runtime.graph.topology import changelog_topic
from streamrt.topic_partition import TopicPartition

__all__ = ("ClientFactory", "Producer", "ThreadClients")

#: A thread's producer: librdkafka's; its transactional subclass under exactly_once_v2.
Producer = LibrdkafkaProducer

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ThreadClients:
    """One thread's clients, as built (the exactly-once committer may renew the producer)."""

    producer: Producer
    consumer: MainConsumer  # librdkafka's, manual assignment
    restore_consumer: RestoreConsumer  # librdkafka's
    offsets_consumer: OffsetsConsumer  # ListOffsets only, on a connection no Fetch holds
    purger: RepartitionPurger | None
    admin: AdminClient  # the offsets consumer's; the EOS producer's settle uses it too

    async def start(self, *, producer: bool) -> bool:
        """Start the producer (unless it waits: exactly_once_v2), the restore and offsets
        consumers; a broker that is not reachable yet (restarting with us) is waited for.
        True if the producer was started or connected (it needs a stop)."""
        opened = producer
        if producer:
            await retry_bootstrap(self.producer.start, "producer")
        elif isinstance(self.producer, TransactionalLibrdkafkaProducer):
            # exactly_once_v2: connected now, InitProducerId once released (start_ahead.py)
            await self.producer.connect()
            opened = True
        await retry_bootstrap(self.restore_consumer.start, "restore consumer")
        await retry_bootstrap(self.offsets_consumer.start, "offsets consumer")
        return opened

    async def close_consumers(self, fenced_ok: bool, thread_name: str) -> None:
        """The consumers hold no group (streamrt's member does and leaves, or not, itself).
        After a hand-off the successor may already have fenced our member: with
        ``fenced_ok`` (the thread was asked to stop) that is not an error."""
        try:
            await self.consumer.stop()
        except Exception as exc:
            if not (fenced_ok and is_fenced(exc)):
                raise
            logger.info(
                "consumer fenced by the successor while closing", extra=fields(thread=thread_name)
            )
        await self.restore_consumer.stop()
        await self.offsets_consumer.stop()  # it never fetched: no fetch routine to get stuck


@dataclass(frozen=True, slots=True)
class ClientFactory:
    """Builds one thread's clients from the config's client settings."""

    env: ThreadEnv
    client_id: str
    group_instance_id: str | None  # static membership
    transactional_id: str | None  # exactly_once_v2
    group_metadata: Callable[[], GroupMetadata]  # the member's, for the txn

    def build(self) -> ThreadClients:
        """streamrt's own member keeps the group; the main consumer only fetches. The offsets
        consumer's admin client is the thread's admin connection (:meth:`thread_admin`)."""
        admin = self.thread_admin()
        return ThreadClients(
            self.thread_producer(admin),
            self.manual_consumer(),
            self.restore_consumer(),
            self.offsets_consumer(admin),
            self.purger(),
            admin,
        )

    def thread_admin(self) -> AdminClient:
        """The thread's one admin client: the offsets consumer's ListOffsets, and under
        exactly_once_v2 each producer start's settle (txn_settle.py), which on a client of its
        own cost a connection, ApiVersions and Metadata per start. Opened and closed with the
        offsets consumer."""
        cfg = self.env.config
        return client_settings.admin_client(cfg.client_config(), f"{self.client_id}-offsets")

    def thread_producer(self, admin: AdminClient) -> Producer:
        """librdkafka's producer; transactional under exactly_once_v2, whose start settles the
        previous transaction through ``admin`` (the thread's, :meth:`thread_admin`)."""
        clients = self.env.config.client_config()
        client_id = f"{self.client_id}-producer"
        config = librdkafka_config(clients, client_id)
        if self.transactional_id is None:
            # records at timestamp 0, which librdkafka would stamp "now": aiokafka's producer
            # with the same settings, built on first use (engine/zero_timestamp.py). Not under
            # exactly_once_v2: that producer would not be in the transaction (rdkafka_txn.py
            # refuses such records instead).
            at_zero = ZeroTimestampSender(
                lambda: AIOKafkaProducer(**client_settings.producer_kwargs(clients, client_id))
            )
            # no stores, no changelog offsets to checkpoint: only failed deliveries reported
            stores = any(sub.stores for sub in self.env.subtopologies)
            return LibrdkafkaProducer(config, at_zero, delivered_offsets=stores)
        config = transactional_config(config, self.transactional_id)
        txn_id = self.transactional_id

        async def settle() -> None:
            """Before ``init_transactions``: the previous incarnation's open transaction,
            fenced and waited for here, not on librdkafka's 500 ms retry (txn_settle.py);
            best effort (errors are logged there)."""
            await settle_open_transaction(admin, txn_id, TRANSACTION_TIMEOUT_MS)

        return TransactionalLibrdkafkaProducer(config, self.group_metadata, settle)

    def manual_consumer(self) -> MainConsumer:
        """The main consumer's settings, no group (the member assigns it its partitions)."""
        cfg = self.env.config
        config, max_records = librdkafka_consumer_config(
            cfg.client_config(),
            self.client_id,
            cfg.application_id,
            read_committed=self.transactional_id is not None,
        )
        return LibrdkafkaConsumer(config, max_records)

    def restore_consumer(self) -> RestoreConsumer:
        """No group: restoration and standbys assign changelog partitions themselves."""
        cfg = self.env.config
        config, max_records = librdkafka_restore_config(
            cfg.client_config(),
            f"{self.client_id}-restore",
            cfg.application_id,
            read_committed=self.transactional_id is not None,
        )
        return LibrdkafkaRestoreConsumer(config, max_records)

    def offsets_consumer(self, admin: AdminClient) -> OffsetsConsumer:
        """Lists end offsets only, with the consumers' isolation level: streamrt's admin client
        (as Kafka Streams' changelog reader asks its admin client), on its own connections."""
        return OffsetsConsumer(admin, read_committed=self.transactional_id is not None)

    def purger(self) -> RepartitionPurger | None:
        """Deletes consumed repartition records after commits (None: no repartition topic)."""
        cfg = self.env.config
        topics = self.env.topology.repartition_topics(cfg.application_id)
        if not topics:
            return None
        client_config, client_id = cfg.client_config(), f"{self.client_id}-purge"
        client_settings.admin_client(client_config, client_id)  # its settings checked now
        return RepartitionPurger(
            topics,
            lambda: client_settings.admin_client(client_config, client_id),
            self.env.clock,
            cfg.repartition_purge_interval_ms,
        )

    def changelog_topics(self) -> list[str]:
        """The changelog topic of each of this topology's stores, by the changelog naming rule."""
        app_id = self.env.config.application_id
        stores = {name for sub in self.env.subtopologies for name in sub.stores}
        return [changelog_topic(app_id, name) for name in sorted(stores)]

    async def warm_offsets_consumer(self, offsets_consumer: OffsetsConsumer) -> None:
        """Held: ask the changelogs' end offsets once, so the metadata and the connections
        the restore check needs after the join are there already (best effort)."""
        app_id = self.env.config.application_id
        stores = {name for sub in self.env.subtopologies for name in sub.stores}
        tps = [TopicPartition(changelog_topic(app_id, name), 0) for name in sorted(stores)]
        if not tps:
            return
        try:
            await asyncio.wait_for(offsets_consumer.end_offsets(tps), 5.0)
        except Exception as exc:  # e.g. a store whose changelog is its source topic
            logger.debug("restore consumer warm-up", extra=fields(error=repr(exc)))
