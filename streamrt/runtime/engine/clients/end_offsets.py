"""Listing changelog end offsets through a broker fault.

The restore check and the standbys list changelog ends with a group-less aiokafka consumer
(``ThreadClients.offsets_consumer``), whose ``end_offsets`` fails at once when a partition's
leader is down or moving (``NodeNotReadyError``, ``LeaderNotAvailableError``, a refused
connection). Kafka's consumer retries such ListOffsets errors until ``default.api.timeout.ms``
(60 s); without the same patience, a restore check that ran while one broker of a cluster was
being restarted killed its stream thread, and with it the instance (seen on a 3-broker Apache
Kafka in the bounce test).
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError as AiokafkaError
from aiokafka.structs import TopicPartition as AiokafkaTP

from streamrt.logs import fields
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
        except AiokafkaError as exc:
            if not exc.retriable or time.monotonic() + delay > deadline:
                raise
            logger.info(
                "listing changelog ends failed, retrying",
                extra=fields(error=f"{type(exc).__name__}: {exc}", retry_in_s=delay),
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


class OffsetsConsumer:
    """The thread's offsets consumer (``ThreadClients.offsets_consumer``): aiokafka's
    ``end_offsets`` in the runtime's :class:`~streamrt.topic_partition.TopicPartition`, so
    aiokafka's own type stays in this room."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer

    async def start(self) -> None:
        await self._consumer.start()

    async def stop(self) -> None:
        await self._consumer.stop()

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        asked = [AiokafkaTP(tp.topic, tp.partition) for tp in partitions]
        ends = await self._consumer.end_offsets(asked)
        return {TopicPartition(tp.topic, tp.partition): int(end) for tp, end in ends.items()}
