"""Clicks for the sessions app: a preload burst (one click per user) and a steady rate.

It counts what it sent per user, which is what the correctness check compares the app's
final profiles against.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter

from aiokafka import AIOKafkaProducer

from streamrt.client_config import ClientConfig
from streamrt.events import security_kwargs

__all__ = ("LoadGenerator", "preload")

PAGES = tuple(f"/page/{n}" for n in range(40))


def _click(user: str, rng: random.Random) -> bytes:
    click = {"user": user, "page": rng.choice(PAGES), "ts": int(time.time() * 1000)}
    return json.dumps(click).encode()


async def _producer(bootstrap: str, client: ClientConfig | None) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=10, **security_kwargs(client, "producer")
    )
    await producer.start()
    return producer


def preload(
    bootstrap: str,
    topic: str,
    users: int,
    sent: Counter[str],
    seed: int = 7,
    client: ClientConfig | None = None,
) -> None:
    """One click for each of ``users`` users, as fast as the broker takes them."""

    async def go() -> None:
        rng = random.Random(seed)
        producer = await _producer(bootstrap, client)
        try:
            for n in range(users):
                user = f"u{n:07d}"
                await producer.send(topic, _click(user, rng), key=user.encode())
                sent[user] += 1
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(go())


class LoadGenerator:
    """Produces ``rate`` clicks/s over ``users`` users from a thread until ``stop()``."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        users: int,
        rate: float,
        seed: int = 11,
        client: ClientConfig | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.client = client
        self.topic = topic
        self.users = users
        self.rate = rate
        self.sent: Counter[str] = Counter()
        self.rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    @property
    def total(self) -> int:
        return sum(self.sent.values())

    def start(self) -> LoadGenerator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    async def _run(self) -> None:
        producer = await _producer(self.bootstrap, self.client)
        began = time.monotonic()
        done = 0
        try:
            while not self._stop.is_set():
                due = int((time.monotonic() - began) * self.rate) - done
                for _ in range(max(due, 0)):
                    user = f"u{self.rng.randrange(self.users):07d}"
                    await producer.send(self.topic, _click(user, self.rng), key=user.encode())
                    self.sent[user] += 1
                    done += 1
                await asyncio.sleep(0.02)
            await producer.flush()
        finally:
            await producer.stop()
