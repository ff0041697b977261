"""Clicks for the sessions app: a preload burst (one click per user) and a steady rate.

It counts what it sent per user, which is what the correctness check compares the app's
final profiles against. For gigabytes of state, :func:`preload_changelog` writes each user's
profile (one click folded) straight into the store's changelog instead: the app's first
start restores it into RocksDB, so the state is real in both places without folding
hundreds of thousands of clicks through the app first.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner

from streamrt.client_config import ClientConfig
from streamrt.events import security_kwargs
from streamrt.examples.session_profiles import add_click, new_profile
from streamrt.serde import JsonSerde

__all__ = ("LoadGenerator", "preload", "preload_changelog", "profile_bytes")

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


def _profile(user: str, rng: random.Random) -> bytes:
    """The stored bytes of ``user``'s profile after one click: what the app's store holds
    (its value serde is JSON) and what its changelog carries."""
    value = JsonSerde().serialize(add_click(user, json.loads(_click(user, rng)), new_profile()))
    assert value is not None
    return value


def profile_bytes() -> int:
    """Key plus value bytes of one preloaded profile, to size ``users`` for a state size."""
    return len(b"u0000000") + len(_profile("u0000000", random.Random(0)))


def preload_changelog(
    bootstrap: str,
    changelog: str,
    users: int,
    partitions: int,
    sent: Counter[str],
    seed: int = 7,
    client: ClientConfig | None = None,
) -> int:
    """Each of ``users`` users' profile after one click, written to ``changelog``; returns the
    bytes written. The partition is the one the clicks producer's default partitioner (murmur2,
    as Kafka's) picks for the user, so changelog partition ``p`` holds task ``p``'s keys.
    ``sent`` counts the one click each profile already holds."""
    partitioner = DefaultPartitioner()
    all_partitions = list(range(partitions))
    rng = random.Random(seed)

    def records() -> Iterator[tuple[str, bytes, bytes, int]]:
        for n in range(users):
            user = f"u{n:07d}"
            key = user.encode()
            yield user, key, _profile(user, rng), partitioner(key, all_partitions, all_partitions)

    try:  # librdkafka when the test/bench extras are installed: GBs in seconds, off the GIL
        from confluent_kafka import Producer
    except ImportError:
        return _preload_aiokafka(bootstrap, changelog, records(), sent, client)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "batch.size": 512 << 10,
            **(client.librdkafka("producer") if client is not None else {}),
        }
    )
    failed: list[object] = []
    written = 0
    for user, key, value, partition in records():
        while True:
            try:
                producer.produce(
                    changelog,
                    value,
                    key,
                    partition,
                    on_delivery=lambda err, _msg: failed.append(err) if err else None,
                )
                break
            except BufferError:
                producer.poll(0.05)
        sent[user] += 1
        written += len(key) + len(value)
    if producer.flush(300) or failed:
        raise RuntimeError(f"changelog preload: {len(failed)} failed, first {failed[:1]}")
    return written


def _preload_aiokafka(
    bootstrap: str,
    changelog: str,
    records: Iterator[tuple[str, bytes, bytes, int]],
    sent: Counter[str],
    client: ClientConfig | None = None,
) -> int:
    async def go() -> int:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=20,
            max_batch_size=512 << 10,
            **security_kwargs(client, "producer"),
        )
        await producer.start()
        written = 0
        try:
            for user, key, value, partition in records:
                await producer.send(changelog, value, key=key, partition=partition)
                sent[user] += 1
                written += len(key) + len(value)
            await producer.flush()
        finally:
            await producer.stop()
        return written

    return asyncio.run(go())


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
        self.sent: Counter[str] = Counter()  # acknowledged by the broker, per user
        self.failed = 0  # sends the producer gave up on (not in ``sent``)
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
        pending: list[asyncio.Future[object]] = []
        try:
            while not self._stop.is_set():
                due = int((time.monotonic() - began) * self.rate) - done
                for _ in range(max(due, 0)):
                    user = f"u{self.rng.randrange(self.users):07d}"
                    sending = await producer.send(
                        self.topic, _click(user, self.rng), key=user.encode()
                    )
                    sending.add_done_callback(functools.partial(self._delivered, user))
                    pending.append(sending)
                    done += 1
                pending = [f for f in pending if not f.done()]
                await asyncio.sleep(0.02)
            await producer.flush()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            await producer.stop()

    def _delivered(self, user: str, sending: asyncio.Future[object]) -> None:
        """Count a click once the broker has it: a send that failed was not sent."""
        if sending.cancelled() or sending.exception() is not None:
            self.failed += 1
        else:
            self.sent[user] += 1
