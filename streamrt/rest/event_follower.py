"""EventFollower: the newest lifecycle events of the application, for the console's timeline.

Started on the first timeline request (an instance nobody watches runs no extra consumer), on
the REST server's own loop. It reads ``<application.id>-events`` from at most ``look_back``
records before its end and keeps following; a broker hiccup is retried, never raised into a
request. Only the types the timeline reads are kept, commits apart from the rest: a restore
publishes one ``restore_progress`` per batch, and tens of thousands of them must not push the
last rebalance out of memory.
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


# what streamrt.rest.timeline reads (app_state also marks a new pid: a restart)
TIMELINE_TYPES = frozenset(
    {
        "rebalance_complete",
        "assignment",
        "app_state",
        "handoff_stopping",
        "restore_complete",
        "member_removed",
        "fenced",
        "fatal_error",
        "thread_failed",
    }
)


class EventFollower:
    def __init__(
        self,
        bootstrap: str,
        application_id: str,
        client: ClientConfig | None,
        keep: int = 5_000,
        look_back: int = 200_000,
    ) -> None:
        self.bootstrap = bootstrap
        self.client = client
        self.topic = events_topic(application_id)
        self.look_back = look_back
        self.read = 0
        self.last_offset = -1
        self._events: deque[dict[str, Any]] = deque(maxlen=keep)
        self._commits: deque[dict[str, Any]] = deque(maxlen=keep * 4)
        self._task: asyncio.Task[None] | None = None
        self.error: str | None = None

    def events(self) -> list[dict[str, Any]]:
        """Start following if not yet (call on the REST loop); the events read so far."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return sorted([*self._events, *self._commits], key=lambda e: int(e["_offset"]))

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
            event = json.loads(value or b"")
        except ValueError:
            return
        if not isinstance(event, dict) or "ts" not in event:
            return
        kind = event.get("type")
        if kind != "commit" and kind not in TIMELINE_TYPES:
            return
        event["_offset"] = offset
        event.setdefault("fields", {})
        (self._commits if kind == "commit" else self._events).append(event)
