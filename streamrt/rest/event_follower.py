"""EventFollower: the newest lifecycle events of the application, for the console's timeline.

Started on the first timeline request (an instance nobody watches runs no extra consumer), on
the REST server's own loop. It reads ``<application.id>-events`` from at most ``keep`` records
before its end and keeps following; a broker hiccup is retried, never raised into a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from typing import Any

from streamrt.client_config import ClientConfig
from streamrt.events import events_topic, security_kwargs
from streamrt.logs import fields

__all__ = ("EventFollower",)

logger = logging.getLogger(__name__)


class EventFollower:
    def __init__(
        self, bootstrap: str, application_id: str, client: ClientConfig | None, keep: int = 20_000
    ) -> None:
        self.bootstrap = bootstrap
        self.client = client
        self.topic = events_topic(application_id)
        self.keep = keep
        self._events: deque[dict[str, Any]] = deque(maxlen=keep)
        self._task: asyncio.Task[None] | None = None
        self.error: str | None = None

    def events(self) -> list[dict[str, Any]]:
        """Start following if not yet (call on the REST loop); the events read so far."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return list(self._events)

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
            start = max(end - self.keep, 0)
            offset = (self._events[-1]["_offset"] + 1) if self._events else start
            consumer.seek(tp, max(offset, start))
            self.error = None
            while True:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    for r in records:
                        self._append(r.offset, r.value)
        finally:
            await consumer.stop()

    def _append(self, offset: int, value: bytes | None) -> None:
        try:
            event = json.loads(value or b"")
        except ValueError:
            return
        if isinstance(event, dict) and "ts" in event and "type" in event:
            event["_offset"] = offset
            event.setdefault("fields", {})
            self._events.append(event)
