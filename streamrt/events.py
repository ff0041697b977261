"""Lifecycle events: every runtime event goes to the log and to ``<application.id>-events``.

Why a topic: a deploy driver, a dashboard or a Spark job can follow every instance of an
application from one place, with no REST endpoint to scrape and nothing lost when a process
dies (events are produced as they happen). Values are JSON (schema in ``docs/events.md``),
keys are the instance id, so one instance's events keep their order.

``EventPublisher`` is an ``App.on_event`` callback: the stream thread only enqueues the event;
a daemon thread with its own event loop owns the producer.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import queue
import socket
import threading
from typing import Any

from streamrt.client_config import ClientConfig
from streamrt.logs import fields

__all__ = (
    "EVENTS_SCHEMA_VERSION",
    "EventPublisher",
    "ensure_topic",
    "event_mac",
    "events_topic",
    "install_event_publisher",
    "security_kwargs",
)

logger = logging.getLogger("streamrt.events")

EVENTS_SCHEMA_VERSION = 1
_STOP = object()
_MAC_DOMAIN = "streamrt-events/v1"


def event_mac(key: str, record: dict[str, Any]) -> str:
    """HMAC-SHA256 of an event (without its ``mac``) keyed by the app's secret, so a reader
    holding the key knows a member of the app wrote it (``docs/operations.md``, "What the
    REST endpoint trusts"). Over the canonical JSON (sorted keys, compact), which a reader
    rebuilds from the parsed value; the ``application_id`` inside ties it to one app."""
    body = json.dumps([_MAC_DOMAIN, record], sort_keys=True, separators=(",", ":"))
    return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()


def events_topic(application_id: str) -> str:
    """The per-application events topic."""
    return f"{application_id}-events"


def _to_record(app: Any, event: dict[str, Any]) -> dict[str, Any]:
    """Flatten an ``App`` event into the documented schema (``docs/events.md``)."""
    thread = event.get("thread")
    instance = event.get("instance_id") or ""
    config = getattr(app, "config", None)
    return {
        "v": EVENTS_SCHEMA_VERSION,
        "ts": event["ts"],
        "application_id": config.application_id if config else None,
        "instance_id": instance,
        "thread": thread,
        "thread_id": f"{instance}-thread-{thread}" if thread is not None else None,
        "static": bool(config and config.group_instance_id),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "type": event["type"],
        "fields": event.get("fields", {}),
    }


class EventPublisher:
    """``app.on_event(EventPublisher(app))``: logs each event and produces it to the topic.

    The producer starts lazily on the first event, when ``app.config`` is resolved. ``close``
    flushes what is queued; call it after ``app.stop()``. With ``mac_key`` (the app's
    ``rest.directory.secret``, else its ``rest.auth.token``) each event carries its ``mac``.
    """

    def __init__(self, app: Any, *, to_topic: bool = True, mac_key: str | None = None) -> None:
        self.app = app
        self.to_topic = to_topic
        self.mac_key = mac_key
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.published = 0

    def __call__(self, event: dict[str, Any]) -> None:
        record = _to_record(self.app, event)
        logger.info(
            f"event {record['type']}",
            extra=fields(
                instance_id=record["instance_id"], thread=record["thread"], **record["fields"]
            ),
        )
        if not self.to_topic or record["application_id"] is None:
            return
        self._ensure_started()
        self._queue.put(record)

    def _ensure_started(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=lambda: asyncio.run(self._run()), daemon=True, name="events-publisher"
                )
                self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """Flush queued events and stop the producer thread."""
        if self._thread is None:
            return
        self._queue.put(_STOP)
        self._thread.join(timeout)

    async def _run(self) -> None:
        from aiokafka import AIOKafkaProducer

        config = self.app.config
        topic = events_topic(config.application_id)
        # the app's own client settings (TLS, SASL), so events reach a secured cluster too
        client = config.client_config() if hasattr(config, "client_config") else None
        await ensure_topic(config.bootstrap_servers, topic, client)
        producer = AIOKafkaProducer(
            **security_kwargs(client, "producer"),
            bootstrap_servers=config.bootstrap_servers,
            client_id=f"{config.application_id}-events",
            acks="all",
            linger_ms=20,
        )
        await producer.start()
        loop = asyncio.get_running_loop()
        try:
            while True:
                item = await loop.run_in_executor(None, self._queue.get)
                if item is _STOP:
                    break
                key = str(item["instance_id"]).encode()
                if self.mac_key is not None:
                    item = {**item, "mac": event_mac(self.mac_key, item)}
                await producer.send(topic, json.dumps(item).encode(), key=key)
                self.published += 1
        finally:
            await producer.stop()


def security_kwargs(client: ClientConfig | None, role: str) -> dict[str, Any]:
    """aiokafka's security keyword arguments (TLS, SASL) for ``role`` (``consumer``,
    ``producer``, ``admin``); empty without client settings. The bootstrap comes separately."""
    if client is None:
        return {}
    if role == "producer":
        kwargs = client.aiokafka_producer_kwargs()
    elif role == "admin":
        kwargs = client.aiokafka_admin_kwargs()
    else:
        kwargs = client.aiokafka_consumer_kwargs(role)
    kwargs.pop("bootstrap_servers", None)
    kwargs.pop("client_id", None)
    return kwargs


async def ensure_topic(bootstrap: str, topic: str, client: ClientConfig | None = None) -> None:
    """One partition keeps a global order across instances (events are few)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    from streamrt.replication import resolve_replication_factor

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **security_kwargs(client, "admin"))
    await admin.start()
    try:  # TOPIC_ALREADY_EXISTS comes back in the response, not raised: fine either way
        replicas = await resolve_replication_factor(admin, -1)  # the brokers' default
        await admin.create_topics([NewTopic(topic, 1, replicas)])
    finally:
        await admin.close()


def install_event_publisher(
    app: Any, *, to_topic: bool = True, mac_key: str | None = None
) -> EventPublisher:
    """Register a publisher on ``app``; returns it so the caller can ``close()`` it."""
    publisher = EventPublisher(app, to_topic=to_topic, mac_key=mac_key)
    app.on_event(publisher)
    return publisher
