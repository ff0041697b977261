"""HostDirectory: every instance's current ``application.server``, kept fresh without rebalances.

Why: the hosts in the assignment user data are only refreshed when the group rebalances, and
a static member that comes back (within ``session.timeout.ms``) with a new
``application.server`` does not cause one — the coordinator keeps the group Stable as long as
the selected protocol is unchanged (KIP-345; kip345-coordinator.md §1.5.1), so followers would
keep the old host for ever (Kafka Streams has this staleness).

How: each instance writes ``instance id → {application.server}`` into the compacted,
one-partition topic ``<application.id>-metadata`` when it starts, and every instance tails
that topic. Plain produce/consume, so it works the same against Apache Kafka, with the app's
own client security settings (TLS, SASL: the ``admin``, ``producer`` and ``consumer`` views of
its Kafka client properties). The newest record per instance wins over the assignment's host.

Trust: a record is used only when it is a well-formed ``host:port`` signed with the app's
secret (:mod:`streamrt.rest.host_records`); anything else is logged and skipped, so it is never
forwarded to and never breaks a metadata answer. Without a secret (no ``rest.directory.secret``
and no ``rest.auth.token``) nothing a peer wrote can be told from a forgery: the directory is
off and peers' hosts come from the assignment alone, as in Kafka Streams.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from streamrt.admin import AdminClient, NewTopic
from streamrt.client_config import ClientConfig
from streamrt.errors import ErrorCode
from streamrt.logs import fields
from streamrt.rest.host_records import BadHostRecord, HostRecord, sign, verify

__all__ = ("HostDirectory", "metadata_topic")

logger = logging.getLogger(__name__)


def metadata_topic(application_id: str) -> str:
    return f"{application_id}-metadata"


class HostDirectory:
    """Publish this instance's host once, then tail every instance's host into ``on_change``."""

    def __init__(
        self,
        client: ClientConfig,
        application_id: str,
        instance_id: str,
        application_server: str,
        secret: str | None,
        on_change: Callable[[dict[str, str]], None],
    ) -> None:
        self.client = client
        self.bootstrap_servers = client.properties()["bootstrap.servers"]
        self.application_id = application_id
        self.topic = metadata_topic(application_id)
        self.instance_id = instance_id
        self.application_server = application_server
        self.hosts: dict[str, str] = {}
        self.rejected = 0  # records skipped as malformed or not signed by a member
        self._secret = secret
        self._newest: dict[str, int] = {}  # instance → updated_ms of the record in use
        self._on_change = on_change

    def _client_kwargs(self, role: str) -> dict[str, object]:
        kwargs: dict[str, object] = (
            self.client.aiokafka_producer_kwargs()
            if role == "producer"
            else self.client.aiokafka_consumer_kwargs(role)
        )
        kwargs["client_id"] = f"{self.instance_id}-host-directory"
        return kwargs

    async def ensure_topic(self) -> None:
        async with AdminClient(
            self.bootstrap_servers,
            client_id="streamrt-rest",
            config=self.client.for_role("admin"),
        ) as admin:
            results = await admin.create_topics(
                [NewTopic(self.topic, 1, -1, {"cleanup.policy": "compact"})]
            )
        error = results.get(self.topic)
        if error is not None and error.code != ErrorCode.topic_already_exists:
            raise error

    async def publish(self, secret: str) -> None:
        record = HostRecord(self.instance_id, self.application_server, int(time.time() * 1000))
        try:
            value = sign(secret, self.application_id, record)
        except BadHostRecord as exc:  # application.server's own check is looser than peers'
            logger.warning("not publishing this host", extra=fields(reason=str(exc)))
            return
        producer = AIOKafkaProducer(acks="all", **self._client_kwargs("producer"))
        await producer.start()
        try:
            await producer.send_and_wait(
                self.topic, value, key=self.instance_id.encode(), partition=0
            )
        finally:
            await producer.stop()

    async def run(self, stopping: asyncio.Event) -> None:
        """Create the topic, publish our host, then follow the topic until ``stopping``."""
        if self._secret is None:
            logger.warning(
                "host directory off: set rest.directory.secret (or rest.auth.token) on every "
                "instance so peers can trust each other's hosts; using the assignment's hosts",
                extra=fields(topic=self.topic),
            )
            await stopping.wait()
            return
        await self.ensure_topic()
        await self.publish(self._secret)
        consumer = AIOKafkaConsumer(
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **self._client_kwargs("consumer"),
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition(self.topic, 0)])
            await consumer.seek_to_beginning()
            while not stopping.is_set():
                batches = await consumer.getmany(timeout_ms=200)
                changed = False
                for records in batches.values():
                    for record in records:
                        changed |= self.apply(record.key, record.value)
                if changed:
                    self._on_change(dict(self.hosts))
        finally:
            await consumer.stop()

    def apply(self, key: bytes | None, value: bytes | None) -> bool:
        """Take one record of the topic into ``hosts``; True when ``hosts`` changed."""
        if key is None or self._secret is None:
            return False
        instance = key.decode(errors="replace")
        if value is None:  # a tombstone: back to the assignment's host (the coordinator's)
            return self.hosts.pop(instance, None) is not None
        try:
            record = verify(self._secret, self.application_id, key, value)
        except BadHostRecord as exc:
            self.rejected += 1
            logger.warning(
                "ignoring a host directory record",
                extra=fields(topic=self.topic, instance_id=instance[:100], reason=str(exc)),
            )
            return False
        if record.updated_ms < self._newest.get(instance, -1):
            logger.warning(
                "ignoring an older host directory record",
                extra=fields(topic=self.topic, instance_id=instance, at=record.updated_ms),
            )
            return False
        self._newest[instance] = record.updated_ms
        if self.hosts.get(instance) == record.application_server:
            return False
        self.hosts[instance] = record.application_server
        return True
