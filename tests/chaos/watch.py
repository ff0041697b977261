"""The chaos test's two clients beside the app: the feeder (an idempotent acks=all producer
at a steady rate) and the watcher (a read_committed consumer of the outputs that notes when
each record became visible), and what is computed from them: per-fault gaps and the checks.
"""

from __future__ import annotations

import itertools
import logging
import random
import struct
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.chaos.chaos_app import INPUT, OUTPUTS, WINDOW_MS

__all__ = (
    "Expected",
    "Feeder",
    "Verdict",
    "Watcher",
    "expected_from_input",
    "gap_around",
    "verdict",
)


# librdkafka's own log (connection refused while the broker is down...) into logging, where
# pytest keeps it with the test, instead of on the terminal
_CLIENT_LOG = logging.getLogger("tests.chaos.clients")
_KEYED_LIKE_INPUT = ("user-counts-out", "region-counts-out")


class Feeder:
    """Orders for ``users`` users at ``rate`` records/s until stopped. Keys go to partitions
    with Java's murmur2, as the runtime's producers do, so an output key's partition is its
    input's (gaps are measured per output partition)."""

    def __init__(self, bootstrap: str, users: int, rate: float, seed: int) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "partitioner": "murmur2_random",
                "message.timeout.ms": 600_000,
                "logger": _CLIENT_LOG,
            }
        )
        self.users = users
        self.rate = rate
        self.rng = random.Random(seed)
        self.sent = 0
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-feeder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed += 1

    def _run(self) -> None:
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            user = f"u{self.rng.randrange(self.users)}"
            try:
                self.producer.produce(
                    INPUT, key=user, value=str(self.sent), on_delivery=self._delivered
                )
                self.sent += 1
            except BufferError:
                pass  # the local queue is full while the broker is down: try later
            self.producer.poll(0)
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_at = time.monotonic()

    def halt(self) -> None:
        """Stop producing now (a run that failed: nothing more is checked)."""
        self._stop.set()

    def stop(self) -> None:
        """Stop producing and deliver what is queued."""
        self._stop.set()
        self._thread.join()
        left = self.producer.flush(120)
        if left:
            raise RuntimeError(f"the feeder could not deliver {left} records in 120 s")


@dataclass
class Watcher:
    """Every output record as it becomes visible under read_committed: (topic, key, value,
    wall time seen)."""

    bootstrap: str
    seen: list[tuple[str, int, str, int, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-watcher", daemon=True)
        self._lock = threading.Lock()

    def start(self, partitions: int) -> None:
        self._partitions = partitions
        self._thread.start()

    def _run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "chaos-watcher",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "logger": _CLIENT_LOG,
            }
        )
        consumer.assign([TopicPartition(t, p, 0) for t in OUTPUTS for p in range(self._partitions)])
        try:
            while not self._stop.is_set():
                try:
                    msgs = consumer.consume(500, 0.2)
                except KafkaException:
                    continue
                now = time.monotonic()
                batch = [
                    (
                        m.topic(),
                        m.partition(),
                        m.key().decode(),
                        struct.unpack(">q", m.value())[0],
                        now,
                    )
                    for m in msgs
                    if m.error() is None and m.key() is not None and m.value() is not None
                ]
                with self._lock:
                    self.seen.extend(batch)
        finally:
            consumer.close()

    def snapshot(self) -> list[tuple[str, int, str, int, float]]:
        with self._lock:
            return list(self.seen)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Expected:
    """What the outputs must come to, from the input topic as it was written."""

    users: Counter[str]
    regions: Counter[str]
    windows: Counter[str]

    def of(self, topic: str) -> Counter[str]:
        return {
            "user-counts-out": self.users,
            "region-counts-out": self.regions,
            "user-window-counts-out": self.windows,
        }[topic]


def expected_from_input(records: list[tuple[str, int]], region_of: dict[str, str]) -> Expected:
    """``records``: every input record's (key, timestamp ms)."""
    users: Counter[str] = Counter()
    regions: Counter[str] = Counter()
    windows: Counter[str] = Counter()
    for user, ts in records:
        users[user] += 1
        regions[region_of[user]] += 1
        windows[f"{user}@{ts - ts % WINDOW_MS}"] += 1
    return Expected(users, regions, windows)


@dataclass
class Verdict:
    """Per output topic: counts of inputs lost, of duplicates (extra counts), of keys wrong."""

    lost: dict[str, int]
    duplicated: dict[str, int]
    wrong_keys: dict[str, list[str]]

    @property
    def total_lost(self) -> int:
        return sum(self.lost.values())

    @property
    def total_duplicated(self) -> int:
        return sum(self.duplicated.values())


def verdict(updates: dict[str, dict[str, list[int]]], expected: Expected, exact: bool) -> Verdict:
    """``updates``: topic → key → the counts emitted, in order. Exactly-once: each key's counts
    are exactly 1..n. At-least-once: the last count is at least n (lost: how far below)."""
    lost: dict[str, int] = {}
    dups: dict[str, int] = {}
    wrong: dict[str, list[str]] = {}
    for topic in OUTPUTS:
        want = expected.of(topic)
        got = updates.get(topic, {})
        lost[topic] = dups[topic] = 0
        bad: list[str] = []
        for key in sorted(set(want) | set(got)):
            n = want.get(key, 0)
            counts = got.get(key, [])
            if exact:
                seen = Counter(counts)
                extra = sum(c - 1 for c in seen.values() if c > 1)
                extra += sum(c for v, c in seen.items() if v > n)
                missing = sum(1 for v in range(1, n + 1) if v not in seen)
            else:
                last = counts[-1] if counts else 0
                missing = max(0, n - last)
                extra = max(0, last - n)
            lost[topic] += missing
            dups[topic] += extra
            if missing or (exact and extra):
                bad.append(key)
        wrong[topic] = bad[:20]
    return Verdict(lost, dups, wrong)


def gap_around(seen: list[tuple[str, int, str, int, float]], start: float, end: float) -> float:
    """The longest time any output partition stopped receiving records around a fault:
    consecutive arrivals over the intervals that overlap [start, end] (the last arrival
    before it counts too). Keys keep their partition from input to output (murmur2 on both
    sides), so a stalled task shows as a gap in the output partitions it writes; the windowed
    counts' keys (``<user>@<start>``) land anywhere and are left out."""
    times: dict[tuple[str, int], list[float]] = defaultdict(list)
    for topic, partition, _, _, at in seen:
        if topic in _KEYED_LIKE_INPUT:
            times[(topic, partition)].append(at)
    longest = 0.0
    for arrivals in times.values():
        arrivals.sort()
        for a, b in itertools.pairwise(arrivals):
            if b >= start and a <= end:
                longest = max(longest, b - a)
    return longest
