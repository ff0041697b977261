"""KIP-848 against the embedded broker with librdkafka: join and static-bounce times.

For each protocol (``classic``: JoinGroup/SyncGroup with librdkafka's default assignor;
``consumer``: ConsumerGroupHeartbeat), ``--runs`` times on a fresh group over a 6-partition
topic:

* join: member A owns all six partitions; member B subscribes; the time until both own
  three (disjoint);
* static bounce: A and B are static (``group.instance.id``); A closes and a new process with
  A's instance id subscribes; the time until it owns A's partitions again, and how many
  partitions B had revoked meanwhile.

Broker defaults (``group.consumer.heartbeat.interval.ms`` 5000) and librdkafka defaults
(classic: ``heartbeat.interval.ms`` 3000, ``session.timeout.ms`` 45000).

    PYTHONPATH=. .venv/bin/python bench/kip848_librdkafka.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic

PARTITIONS = 6


class Member:
    def __init__(self, bootstrap: str, topic: str, group: str, protocol: str, instance: str | None):
        self.revoked = 0
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
        }
        if instance:
            config["group.instance.id"] = instance
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic], on_revoke=self._on_revoke)

    def _on_revoke(self, _: Consumer, tps: list[TopicPartition]) -> None:
        self.revoked += len(tps)

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def _until(members: list[Member], condition: Any, timeout: float = 120.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        for m in members:
            m.consumer.poll(0.01)
        if condition():
            return time.monotonic() - start
    raise TimeoutError("condition not reached")


def join_once(bootstrap: str, protocol: str) -> float:
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    a = Member(bootstrap, topic, group, protocol, None)
    _until([a], lambda: len(a.owned()) == PARTITIONS)
    b = Member(bootstrap, topic, group, protocol, None)
    took = _until(
        [a, b], lambda: len(a.owned()) == 3 and len(b.owned()) == 3 and not a.owned() & b.owned()
    )
    a.consumer.close()
    b.consumer.close()
    return took


def bounce_once(bootstrap: str, protocol: str) -> tuple[float, int]:
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    a = Member(bootstrap, topic, group, protocol, "A")
    b = Member(bootstrap, topic, group, protocol, "B")
    _until([a, b], lambda: len(a.owned()) == 3 and len(b.owned()) == 3)
    kept, b.revoked = a.owned(), 0
    a.consumer.close()
    a2 = Member(bootstrap, topic, group, protocol, "A")
    took = _until([a2, b], lambda: a2.owned() == kept)
    revoked = b.revoked
    a2.consumer.close()
    b.consumer.close()
    return took, revoked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerThread(Path(tmp), {"offsets.topic.num.partitions": "4"}).start()
        try:
            for protocol in ("classic", "consumer"):
                joins = [join_once(broker.bootstrap, protocol) for _ in range(args.runs)]
                bounces = [bounce_once(broker.bootstrap, protocol) for _ in range(args.runs)]
                times = [t for t, _ in bounces]
                spread = f"min {min(times):.2f}, max {max(times):.2f}"
                print(
                    f"{protocol}: join median {statistics.median(joins):.2f} s "
                    f"(min {min(joins):.2f}, max {max(joins):.2f}); static bounce median "
                    f"{statistics.median(times):.2f} s ({spread}),"
                    f" partitions revoked from the other member: {[r for _, r in bounces]}",
                    flush=True,
                )
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
