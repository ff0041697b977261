"""Listing changelog end offsets through a broker fault.

The restore check and the standbys list changelog ends with streamrt's admin client
(``ThreadClients.offsets_consumer``): one ListOffsets per leader for all the partitions asked,
with the isolation level of the thread's consumers (the last stable offset under
exactly_once_v2; librdkafka's ``get_watermark_offsets`` asks per partition), on connections of
its own that no long-poll Fetch holds. A call can fail when a partition's leader is down or
moving (a refused connection, LEADER_NOT_AVAILABLE past the admin client's own retries).
Kafka's consumer retries such ListOffsets errors until ``default.api.timeout.ms`` (60 s);
without the same patience, a restore check that ran while one broker of a cluster was being
restarted killed its stream thread, and with it the instance (seen on a 3-broker Apache Kafka
in the bounce test, then with aiokafka's ``NodeNotReadyError``).
"""

from __future__ import annotations

import asyncio
import logging
import time

from streamrt.admin.client import LATEST, AdminClient
from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import KafkaError
from streamrt.logs import fields
from streamrt.runtime.engine.clients.bootstrap import is_retriable
from streamrt.runtime.engine.restore_consumer import EndOffsets
from streamrt.topic_partition import TopicPartition

__all__ = ("DEFAULT_API_TIMEOUT_S", "OffsetsConsumer", "end_offsets_through_faults")

logger = logging.getLogger(__name__)

#: Kafka's ``default.api.timeout.ms``: how long a consumer call retries retriable errors
DEFAULT_API_TIMEOUT_S = 60.0


async def end_offsets_through_faults(
    source: EndOffsets,
    partitions: list[TopicPartition],
    timeout_s: float = DEFAULT_API_TIMEOUT_S,
) -> dict[TopicPartition, int]:
    """``source.end_offsets(partitions)``, retried with a backoff (0.1 s doubling to 1 s) while
    it fails with an error Kafka calls retriable, for up to ``timeout_s``; then the error."""
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    while True:
        try:
            return await source.end_offsets(partitions)
        except (AdminConnectionError, KafkaError) as exc:
            if not is_retriable(exc) or time.monotonic() + delay > deadline:
                raise
            logger.info(
                "listing changelog ends failed, retrying",
                extra=fields(error=f"{type(exc).__name__}: {exc}", retry_in_s=delay),
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


class OffsetsConsumer:
    """The thread's offsets consumer (``ThreadClients.offsets_consumer``): end offsets only,
    through streamrt's admin client, in the runtime's
    :class:`~streamrt.topic_partition.TopicPartition`."""

    def __init__(self, admin: AdminClient, read_committed: bool = False) -> None:
        self._admin = admin
        self._read_committed = read_committed

    async def start(self) -> None:
        """Read the cluster's metadata (a missing broker raises, for ``retry_bootstrap``)."""
        await self._admin.__aenter__()

    async def stop(self) -> None:
        await self._admin.close()

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        ends = await self._admin.list_offsets(
            [(tp.topic, tp.partition) for tp in partitions],
            LATEST,
            read_committed=self._read_committed,
        )
        return {TopicPartition(topic, partition): end for (topic, partition), end in ends.items()}
