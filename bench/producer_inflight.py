"""librdkafka's producer CPU a record by ``max.in.flight.requests.per.connection``: the thread's
``produce`` call, its delivery reports, and the whole process (librdkafka's threads included).

Why: on the sessions fold the contender's librdkafka threads took ~14 us of CPU a click; the
idempotent producer at Kafka's default of 5 requests in flight keeps its broker thread awake
while a request is out, at 1 it waits on the socket (docs/bench/history.md, "The idempotent
producer's in-flight requests"). Records of 2.3 KB (the sessions profile) to 2 partitions,
as fast as the loop goes, a delivery report per record as the changelog's; variants
interleaved, medians and ranges of ``--runs``.

    .venv/bin/python bench/producer_inflight.py [--runs 3] [--records 30000] [--kafka apache]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _broker import free_port, start_broker
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: the runtime's producer settings (client_settings.PRODUCER_DEFAULTS) and the variants
BASE = {"linger.ms": 10, "batch.size": 1 << 20, "message.max.bytes": 8 << 20, "acks": "all"}
VARIANTS: dict[str, dict[str, Any]] = {
    "idempotent, 5 in flight": {"enable.idempotence": True},
    "idempotent, 1 in flight": {"enable.idempotence": True, "max.in.flight": 1},
    "transactional, 5 in flight": {"transactional.id": "inflight-5"},
    "transactional, 1 in flight": {"transactional.id": "inflight-1", "max.in.flight": 1},
    "not idempotent, 1 in flight": {"enable.idempotence": False, "max.in.flight": 1},
}


def run(bootstrap: str, variant: dict[str, Any], records: int) -> tuple[float, float, float]:
    """(produce call, delivery reports, process) CPU in us a record."""
    producer = Producer({"bootstrap.servers": bootstrap, **BASE, **variant})
    transactional = "transactional.id" in variant
    if transactional:
        producer.init_transactions()
        producer.begin_transaction()
    slot: dict[Any, Any] = {}
    report = slot.__setitem__  # the runtime's C-level report (rdkafka_producer module doc)
    value = b"x" * 2300
    producer.produce("inflight", value, b"k", 0, report, None, 1, None)
    producer.flush()
    produce_s = poll_s = 0.0
    process0 = time.process_time()
    for i in range(records):
        t0 = time.thread_time()
        producer.produce("inflight", value, b"k%d" % (i % 1000), i % 2, report, None, 1 + i, None)
        t1 = time.thread_time()
        produce_s += t1 - t0
        if i % 500 == 0:
            producer.poll(0)
            poll_s += time.thread_time() - t1
    while producer.flush(1.0):
        pass
    if transactional:
        producer.commit_transaction()
    process_s = time.process_time() - process0
    assert None in slot, "no delivery report"
    return produce_s / records * 1e6, poll_s / records * 1e6, process_s / records * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=30_000)
    ap.add_argument("--kafka", choices=("embedded", "apache"), default="embedded")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stop: Any
        if args.kafka == "apache":
            from streamrt.dev.apache_kafka import ApacheKafka

            kafka = ApacheKafka(1, work_dir=Path(tmp) / "apache-kafka").start()
            bootstrap, stop = kafka.bootstrap, kafka.stop
        else:
            port = free_port()
            proc = start_broker(tmp, port)
            bootstrap = f"127.0.0.1:{port}"
            stop = lambda: (proc.terminate(), proc.wait())  # noqa: E731
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for future in admin.create_topics([NewTopic("inflight", 2, 1)]).values():
                future.result()
            results: dict[str, list[tuple[float, float, float]]] = {v: [] for v in VARIANTS}
            for _ in range(args.runs):
                for name, variant in VARIANTS.items():
                    results[name].append(run(bootstrap, variant, args.records))
        finally:
            stop()
    print(f"{args.records} records of 2.3 KB x {args.runs}, {args.kafka} broker, us a record:")
    for name, rows in results.items():
        cols = []
        for i, label in enumerate(("produce call", "reports", "process")):
            xs = [r[i] for r in rows]
            cols.append(f"{label} {statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})")
        print(f"  {name:28s} " + "  ".join(cols))


if __name__ == "__main__":
    main()
