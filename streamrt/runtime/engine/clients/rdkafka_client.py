"""LibrdkafkaConsumerClient: the life of a confluent-kafka ``Consumer`` that streamrt drives in
assign mode (the stream thread's main consumer and its restore consumer).

Why shared: both open the client the same way (its log lines through a Python logger, errors
through ``error_cb``), close it off the event loop (librdkafka's close waits for its own
threads) and must stop at the first fatal error rather than poll a dead client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

__all__ = ("LOOKUP_TIMEOUT_S", "LibrdkafkaConsumerClient")

# A topic's lookup holds its partitions back at most this long: librdkafka's own scan would
# have found the topic within a second anyway
LOOKUP_TIMEOUT_S = 1.0


class LibrdkafkaConsumerClient:
    """Start, stop and fatal-error bookkeeping; subclasses say what they are (``role``) and
    where their logs go (``log``)."""

    role = "librdkafka consumer"
    log = logging.getLogger(__name__)

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config
        self._consumer: Any = None
        self._fatal: str | None = None
        self._known_topics: set[str] = set()  # looked up (or the lookup gave up): see _describe

    async def start(self) -> None:
        from confluent_kafka import Consumer

        self._consumer = Consumer({**self._config, "error_cb": self._error, "logger": self.log})

    async def stop(self) -> None:
        """Close off the loop (librdkafka's close waits for its threads); commits nothing."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await asyncio.to_thread(consumer.close)

    def _describe(self, topics: Iterable[str]) -> None:
        """Look ``topics`` up (blocking: call it off the loop); librdkafka keeps the answer.

        Why: librdkafka starts a partition of a topic it holds no metadata for only after its
        once-a-second scan has asked for that topic (measured: a fresh consumer's first record
        0.71 s after the assignment, median of 10; 0.011 s with the topic looked up first)."""
        consumer = self._consumer
        for topic in sorted(topics):
            try:
                consumer.list_topics(topic, timeout=LOOKUP_TIMEOUT_S)
            except Exception as exc:  # slow, unknown or closed: librdkafka's scan finds it
                self.log.debug("%s: looking up %s: %s", self.role, topic, exc)

    def _raise_if_fatal(self) -> None:
        if self._fatal is not None:
            raise RuntimeError(self._fatal)

    def _error(self, err: Any) -> None:
        if err.fatal():
            self._fatal = self._fatal or f"fatal {self.role} error: {err}"
        self.log.warning("%s: %s", self.role, err)
