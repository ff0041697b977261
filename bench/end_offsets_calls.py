"""One end-offsets call for ``--partitions`` partitions, read_committed, on the embedded broker:
streamrt's admin client (``list_offsets``: a Metadata request, then one ListOffsets per
leader; what a stream thread's offsets consumer sends since issue 37) against aiokafka's
consumer ``end_offsets`` (one ListOffsets on cached metadata; the offsets consumer before).
Medians of ``--calls`` calls, ``--runs`` times, interleaved.

    PYTHONPATH=. .venv/bin/python bench/end_offsets_calls.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from streamrt.admin.client import LATEST, AdminClient
from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic


async def _compare(bootstrap: str, partitions: int, calls: int, runs: int) -> None:
    tps = [("end-offsets", p) for p in range(partitions)]
    theirs = [TopicPartition(t, p) for t, p in tps]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    await consumer.start()
    try:
        async with AdminClient(bootstrap) as admin:
            for run in range(runs):
                ours_s, aiokafka_s = [], []
                for _ in range(calls):
                    started = time.perf_counter()
                    await admin.list_offsets(tps, LATEST, read_committed=True)
                    ours_s.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    await consumer.end_offsets(theirs)
                    aiokafka_s.append(time.perf_counter() - started)
                print(
                    f"run {run}: admin list_offsets {statistics.median(ours_s) * 1e3:.2f} ms, "
                    f"aiokafka end_offsets {statistics.median(aiokafka_s) * 1e3:.2f} ms"
                )
    finally:
        await consumer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work, BrokerThread(Path(work), {}) as broker:
        create_topic(broker.bootstrap, "end-offsets", args.partitions)
        asyncio.run(_compare(broker.bootstrap, args.partitions, args.calls, args.runs))


if __name__ == "__main__":
    main()
