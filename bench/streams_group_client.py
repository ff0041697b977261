"""streamrt's stream threads under ``group.protocol=classic`` vs ``streams`` (KIP-1071), on the
embedded broker: forming, a static bounce, a scale-out.

For each protocol, ``--runs`` times on a fresh broker, the counting app (a stateful count over
8 partitions, RocksDB, a changelog) with 400 records in:

* form: two static instances start; the time until both run with 4 tasks each;
* static bounce: one stops (classic: keeps its session; streams: leaves with epoch -2) and a
  new process with its ``group.instance.id`` starts; the time from its start until it runs
  its tasks again, the records it restored, and the survivor's rebalances meanwhile;
* scale-out: a third, dynamic instance starts; the time until it runs tasks, and the records
  it restored (its tasks come with their state).

Defaults everywhere (broker: ``group.streams.heartbeat.interval.ms`` 5000; app:
``heartbeat.interval.ms`` 3000, ``session.timeout.ms`` 45000).

    PYTHONPATH=. .venv/bin/python bench/streams_group_client.py --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from streamrt.broker.embedded import BrokerThread
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, produce
from tests.runtime.counting_app import make_app


def _tasks(app: App) -> list[str]:
    return sorted(t for th in app.metadata_for_local_threads() for t in th.active_tasks)


def _running(*apps: App) -> bool:
    threads = [t for a in apps for t in a.metadata_for_local_threads()]
    total = sum(len(t.active_tasks) for t in threads)
    return total == 8 and all(t.state.name == "RUNNING" for t in threads)


def _until(condition: Callable[[], bool], timeout: float = 120.0) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError("condition not reached")
        time.sleep(0.02)
    return time.monotonic() - start


def _app(bootstrap: str, state: Path, protocol: str, instance: str | None) -> App:
    settings = {"bootstrap.servers": bootstrap, "state.dir": str(state), "group.protocol": protocol}
    if instance is not None:
        settings["group.instance.id"] = instance
    return make_app(settings)


def one_run(protocol: str, work: Path) -> dict[str, float]:
    broker = BrokerThread(data_dir=work / "broker")
    broker.start()
    apps: list[App] = []
    try:
        create_topic(broker.bootstrap, "events", 8)
        create_topic(broker.bootstrap, "event-counts-out", 8)
        produce(broker.bootstrap, "events", [(f"k{i % 64}".encode(), b"e") for i in range(400)])
        a = _app(broker.bootstrap, work / "a", protocol, "a")
        b = _app(broker.bootstrap, work / "b", protocol, "b")
        apps += [a, b]
        start = time.monotonic()
        a.start()
        b.start()
        _until(lambda: _running(a, b) and len(_tasks(a)) == 4)
        form = time.monotonic() - start
        time.sleep(1.0)  # a commit interval or so: checkpoints written
        before, rebalances = _tasks(b), sum(t.rebalances for t in a.metadata_for_local_threads())
        b.stop()
        back = _app(broker.bootstrap, work / "b", protocol, "b")
        apps.append(back)
        start = time.monotonic()
        back.start()
        _until(lambda: _running(a, back) and _tasks(back) == before)
        bounce = time.monotonic() - start
        restored = sum(t.records_restored for t in back.metadata_for_local_threads())
        survivor = sum(t.rebalances for t in a.metadata_for_local_threads()) - rebalances
        c = _app(broker.bootstrap, work / "c", protocol, None)
        apps.append(c)
        start = time.monotonic()
        c.start()
        _until(lambda: _running(a, back, c) and len(_tasks(c)) >= 2)
        scale = time.monotonic() - start
        moved = sum(t.records_restored for t in c.metadata_for_local_threads())
        return {
            "form_s": form,
            "bounce_s": bounce,
            "bounce_restored": restored,
            "survivor_rebalances": survivor,
            "scale_out_s": scale,
            "scale_out_restored": moved,
        }
    finally:
        for app in apps:
            app.stop()
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for protocol in ("classic", "streams"):
        runs = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(one_run(protocol, Path(tmp)))
        print(protocol)
        for key in runs[0]:
            values = [r[key] for r in runs]
            rounded = [round(v, 2) for v in values]
            print(
                f"  {key}: median {statistics.median(values):.2f} "
                f"(min {min(values):.2f}, max {max(values):.2f}) runs {rounded}"
            )


if __name__ == "__main__":
    main()
