"""Produce latency with many long-poll fetches parked on other partitions (issue 42, item 2).

A ``streamrt broker`` subprocess; ``--parked`` raw connections each send a Fetch of partition
1 (max_wait 60 s, min_bytes 2 GiB) and stay open; then one connection sends ``--produces``
sequential Produce v8 requests (acks=1, one 100-byte record) to partition 0 and times each
round trip. Printed: p50/p99/max in ms, with and without the parked fetches.

With one broker-wide wake-up signal every produce re-ran every parked fetch; with fetches
indexed by partition, a produce to partition 0 touches none of them.

    .venv/bin/python bench/parked_fetch_produce.py --parked 2000
    .venv/bin/python bench/parked_fetch_produce.py --checkout /work/main   # the broker of main
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker

from tests.broker.batches import batch
from tests.broker.raw_fetch import fetch_frame
from tests.broker.raw_produce import RawProducer
from tests.kafka_helpers import create_topic

ROOT = Path(__file__).resolve().parents[1]
TOPIC = "parked-bench"


def _latencies(bootstrap: str, produces: int) -> list[float]:
    record = bytes(batch([b"x" * 100]))
    out = []
    with RawProducer(bootstrap) as producer:
        for _ in range(produces):
            started = time.perf_counter()
            code, _ = producer.produce(TOPIC, 0, record)
            out.append((time.perf_counter() - started) * 1000)
            assert code == 0, code
    return out


def _report(label: str, ms: list[float]) -> None:
    ms = sorted(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"{label:>24}: p50 {statistics.median(ms):7.2f} ms  p99 {p99:7.2f} ms  "
        f"max {ms[-1]:7.2f} ms  ({len(ms)} produces)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parked", type=int, default=2000)
    parser.add_argument("--produces", type=int, default=300)
    parser.add_argument("--checkout", default=str(ROOT), help="whose streamrt runs the broker")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": args.checkout}
    with tempfile.TemporaryDirectory() as data_dir:
        port = free_port()
        proc = start_broker(data_dir, port, env=env, cwd=args.checkout)
        bootstrap = f"127.0.0.1:{port}"
        sockets: list[socket.socket] = []
        try:
            create_topic(bootstrap, TOPIC, partitions=2)
            _latencies(bootstrap, 50)  # warm-up
            _report("0 parked fetches", _latencies(bootstrap, args.produces))
            frame = fetch_frame(TOPIC, 1, max_wait_ms=60_000)
            for _ in range(args.parked):
                s = socket.create_connection(("127.0.0.1", port))
                s.sendall(frame)
                sockets.append(s)
            time.sleep(3)  # let the broker read and park them all
            _latencies(bootstrap, 20)
            _report(f"{args.parked} parked fetches", _latencies(bootstrap, args.produces))
        finally:
            for s in sockets:
                s.close()
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
