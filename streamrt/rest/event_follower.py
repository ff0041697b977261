"""EventFollower: the newest lifecycle events of the application, for the console's timeline.

Started on the first timeline request (an instance nobody watches runs no extra consumer), on
the REST server's own loop. It reads ``<application.id>-events`` from at most ``look_back``
records before its end and keeps following; a broker hiccup is retried, never raised into a
request. Each record is checked when read (:func:`streamrt.rest.event_check.check_event`):
only the types the timeline reads are kept, as small normalized dicts; an oversized,
malformed or (with a signing key) unsigned record is skipped and counted. What is kept is
bounded by bytes (``rest.console.timeline.max.bytes``), not only by count: this runs in the
process of the stream threads. Commits are kept apart from the rest, each in half the
budget: a busy app commits often, and its commits must not push the last rebalance out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter, deque
from typing import Any

from streamrt.client_config import ClientConfig
from streamrt.events import events_topic, security_kwargs
from streamrt.logs import fields
from streamrt.rest.event_check import BadEvent, check_event

__all__ = ("EventFollower",)

logger = logging.getLogger(__name__)

# what one kept event costs beyond its JSON length: the dict and its small objects (measured
# with tracemalloc: an 8-partition assignment event of 292 bytes of JSON kept as ~1.9 KB)
EVENT_OVERHEAD_BYTES = 1536
FETCH_MAX_BYTES = 1024 * 1024  # one fetch's records in memory at once


class _Kept:
    """Events in arrival order, the oldest dropped past ``max_bytes`` or ``max_count``."""

    def __init__(self, max_bytes: int, max_count: int) -> None:
        self.max_bytes = max_bytes
        self.max_count = max_count
        self.bytes = 0
        self.items: deque[tuple[int, dict[str, Any]]] = deque()

    def add(self, event: dict[str, Any], size: int) -> None:
        self.items.append((size, event))
        self.bytes += size
        while self.items and (self.bytes > self.max_bytes or len(self.items) > self.max_count):
            dropped, _ = self.items.popleft()
            self.bytes -= dropped


class EventFollower:
    def __init__(
        self,
        bootstrap: str,
        application_id: str,
        client: ClientConfig | None,
        *,
        max_bytes: int,
        event_max_bytes: int,
        mac_key: str | None = None,
        keep: int = 5_000,
        look_back: int = 200_000,
    ) -> None:
        self.bootstrap = bootstrap
        self.client = client
        self.application_id = application_id
        self.topic = events_topic(application_id)
        self.look_back = look_back
        self.event_max_bytes = event_max_bytes
        self.mac_key = mac_key
        self.read = 0
        self.last_offset = -1
        self.skipped: Counter[str] = Counter()
        self.last_skipped: deque[dict[str, Any]] = deque(maxlen=5)
        self._events = _Kept(max_bytes // 2, keep)
        self._commits = _Kept(max_bytes - max_bytes // 2, keep * 4)
        self._task: asyncio.Task[None] | None = None
        self.error: str | None = None

    @property
    def kept_bytes(self) -> int:
        """What the kept events are charged (their JSON length plus a fixed overhead each)."""
        return self._events.bytes + self._commits.bytes

    def events(self) -> list[dict[str, Any]]:
        """Start following if not yet (call on the REST loop); the events read so far."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        kept = [e for _, e in (*self._events.items, *self._commits.items)]
        return sorted(kept, key=lambda e: int(e["_offset"]))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.error = repr(exc)
                logger.warning("events topic follower failed", extra=fields(error=self.error))
                await asyncio.sleep(2.0)

    async def _follow(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            fetch_max_wait_ms=200,
            fetch_max_bytes=FETCH_MAX_BYTES,
            max_partition_fetch_bytes=FETCH_MAX_BYTES,
            **security_kwargs(self.client, "consumer"),
        )
        await consumer.start()
        try:
            tp = TopicPartition(self.topic, 0)
            if tp.topic not in await consumer.topics():
                self.error = f"{self.topic} does not exist (yet): no events published"
                await asyncio.sleep(2.0)
                return
            consumer.assign([tp])
            end = (await consumer.end_offsets([tp]))[tp]
            consumer.seek(tp, max(self.last_offset + 1, end - self.look_back, 0))
            self.error = None
            while True:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    for r in records:
                        self._append(r.offset, r.value)
        finally:
            await consumer.stop()

    def _append(self, offset: int, value: bytes | None) -> None:
        self.read += 1
        self.last_offset = offset
        try:
            event = check_event(
                value,
                max_bytes=self.event_max_bytes,
                key=self.mac_key,
                application_id=self.application_id,
            )
        except BadEvent as exc:
            self.skipped[exc.kind] += 1
            self.last_skipped.append({"offset": offset, "kind": exc.kind, "reason": str(exc)})
            return
        if event is None:
            return
        event["_offset"] = offset
        size = len(value or b"") + EVENT_OVERHEAD_BYTES
        (self._commits if event["type"] == "commit" else self._events).add(event, size)
