"""HostDirectory: every instance's current ``application.server``, kept fresh without rebalances.

Why: the hosts in the assignment user data are only refreshed when the group rebalances, and
a static member that comes back (within ``session.timeout.ms``) with a new
``application.server`` does not cause one — the coordinator keeps the group Stable as long as
the selected protocol is unchanged (KIP-345; kip345-coordinator.md §1.5.1), so followers would
keep the old host for ever (Kafka Streams has this staleness).

How: each instance writes ``instance id → {application.server}`` into the compacted,
one-partition topic ``<application.id>-metadata`` when it starts, and every instance tails
that topic. Plain produce/consume, so it works the same against Apache Kafka. The newest
record per instance wins over the assignment's host.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from streamrt.admin import AdminClient, NewTopic
from streamrt.errors import ErrorCode
from streamrt.logs import fields

__all__ = ("HostDirectory", "metadata_topic")

logger = logging.getLogger(__name__)


def metadata_topic(application_id: str) -> str:
    return f"{application_id}-metadata"


class HostDirectory:
    """Publish this instance's host once, then tail every instance's host into ``on_change``."""

    def __init__(
        self,
        bootstrap_servers: str,
        application_id: str,
        instance_id: str,
        application_server: str,
        on_change: Callable[[dict[str, str]], None],
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = metadata_topic(application_id)
        self.instance_id = instance_id
        self.application_server = application_server
        self.hosts: dict[str, str] = {}
        self._on_change = on_change

    async def ensure_topic(self) -> None:
        async with AdminClient(self.bootstrap_servers, client_id="streamrt-rest") as admin:
            results = await admin.create_topics(
                [NewTopic(self.topic, 1, -1, {"cleanup.policy": "compact"})]
            )
        error = results.get(self.topic)
        if error is not None and error.code != ErrorCode.topic_already_exists:
            raise error

    async def publish(self) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap_servers, acks="all")
        await producer.start()
        try:
            value = {
                "instance_id": self.instance_id,
                "application_server": self.application_server,
                "updated_ms": int(time.time() * 1000),
            }
            await producer.send_and_wait(
                self.topic, json.dumps(value).encode(), key=self.instance_id.encode(), partition=0
            )
        finally:
            await producer.stop()

    async def run(self, stopping: asyncio.Event) -> None:
        """Create the topic, publish our host, then follow the topic until ``stopping``."""
        await self.ensure_topic()
        await self.publish()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap_servers,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
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
                        changed |= self._apply(record.key, record.value)
                if changed:
                    self._on_change(dict(self.hosts))
        finally:
            await consumer.stop()

    def _apply(self, key: bytes | None, value: bytes | None) -> bool:
        if key is None:
            return False
        instance = key.decode(errors="replace")
        if value is None:
            return self.hosts.pop(instance, None) is not None
        try:
            server = str(json.loads(value)["application_server"])
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring a bad metadata record", extra=fields(instance_id=instance))
            return False
        if self.hosts.get(instance) == server:
            return False
        self.hosts[instance] = server
        return True
