"""A global table's restore, timed: ``--records`` records of 100 bytes over 4 partitions of one
topic on the embedded broker, then ``GlobalStreamThread.start()`` (which returns once the store
holds the topic up to its end offsets), ``--runs`` times, each with a fresh thread.

Runs the tree on ``PYTHONPATH``: this one, or an older one exported with
``git archive <commit> streamrt | tar -x -C /tmp/old`` (before issue 37 moved the thread to
librdkafka it was ``runtime/processors/global_thread.py``, on aiokafka):

    PYTHONPATH=. .venv/bin/python bench/global_restore.py --records 500000
    PYTHONPATH=/tmp/old:. .venv/bin/python bench/global_restore.py --records 500000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from streamrt.broker.embedded import BrokerThread
from streamrt.runtime import App
from tests.kafka_helpers import create_topic

TOPIC = "global-restore"


def _fill(bootstrap: str, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, key=b"k%08d" % i, value=b"v" * 100, partition=i % 4)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(120)


def _thread(app: App, bootstrap: str, name: str) -> Any:
    specs = list(app.topology.global_tables.values())
    try:
        from streamrt.runtime.engine.thread.global_thread import GlobalStreamThread

        return GlobalStreamThread(app.resolve_config(), name, specs)
    except ImportError:  # a tree from before issue 37's move
        from streamrt.runtime.processors.global_thread import (  # type: ignore[import-not-found]
            GlobalStreamThread as OldThread,
        )

        return OldThread(bootstrap, name, specs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work, BrokerThread(Path(work), {}) as broker:
        create_topic(broker.bootstrap, TOPIC, 4)
        _fill(broker.bootstrap, args.records)
        times = []
        for run in range(args.runs):
            app = App({"application.id": f"gr{run}", "bootstrap.servers": broker.bootstrap})
            app.global_table(TOPIC, store="s", key_serde="bytes", value_serde="bytes")
            thread = _thread(app, broker.bootstrap, f"gr{run}")
            started = time.perf_counter()
            thread.start(timeout=600)
            times.append(time.perf_counter() - started)
            store = next(iter(app.topology.global_tables.values())).require()
            assert len(store) == args.records, (len(store), args.records)
            thread.stop()
        print(
            f"{type(thread).__module__}: {args.records} records, restore s "
            f"{[round(t, 2) for t in times]}, median {statistics.median(times):.2f} "
            f"({min(times):.2f}-{max(times):.2f})"
        )


if __name__ == "__main__":
    main()
