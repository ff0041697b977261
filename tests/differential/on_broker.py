"""Run a differential scenario through a real App on a broker (issue 23, Deliver 4).

The scenario's topology is built as for the test driver and run by ``App`` (its stream thread,
aiokafka clients, RocksDB stores) against a broker. Two ways to feed it:

* ``stepwise``: each input step is produced, then the run waits until the app is idle (its
  group's committed offset equals the end offset on every topic it reads, repartition topics
  included) before the next step, as Kafka's driver processes each piped record to the end.
* ``prefilled``: every input is on the broker before the app starts; the PartitionGroup then
  picks records across the input topics by timestamp (only for scenarios whose input
  timestamps strictly increase, so that order is the driver's pipe order).

What comes out is each output topic read from the start (one partition: its order is the
order the app wrote it) as ``Event``s without the step (a broker cannot say after which input
a record came out).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition

from streamrt.runtime import App
from streamrt.serde import serde_for
from tests.differential.streamrt_side import Event
from tests.differential.topology import JSON, STR, WIRE_SUFFIX, build
from tests.kafka_helpers import create_topic, produce, read_all

KEYS, VALUES = serde_for(STR), serde_for(JSON)


def comparable(events: Iterable[Event]) -> list[Event]:
    """Events as a broker run can see them: the step dropped (-1), grouped by topic (name
    order), each topic's records in the order they came out."""
    seen = [Event(-1, e.topic, e.key, e.value, e.ts) for e in events if e.error is None]
    return sorted(seen, key=lambda e: e.topic or "")


def feedable(scenario: dict[str, Any], prefilled: bool) -> bool:
    """No wall-clock steps, no global tables (a global thread applies them at its own pace);
    prefilled: input timestamps strictly increasing."""
    steps = scenario["steps"]
    if any("advance_ms" in s for s in steps):
        return False
    if any(n["op"] == "globalTable" for n in scenario["topology"]):
        return False
    stamps = [s["ts"] for s in steps]
    return not prefilled or all(a < b for a, b in itertools.pairwise(stamps))


def _produce_step(bootstrap: str, step: dict[str, Any]) -> None:
    record = (KEYS.serialize(step.get("key")), VALUES.serialize(step.get("value")))
    produce(bootstrap, step["pipe"], [record], timestamps=[step["ts"]], partition=0)


async def _lagging(bootstrap: str, group: str, topics: list[str]) -> dict[str, int]:
    """Per topic the app reads: records past the group's committed offset (empty: idle)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await admin.start()
    await consumer.start()
    try:
        committed = await admin.list_consumer_group_offsets(group)
        tps = [TopicPartition(t, 0) for t in topics]
        ends = await consumer.end_offsets(tps)
        lag = {}
        for tp in tps:
            at = committed[tp].offset if tp in committed else 0
            if ends[tp] > at:
                lag[tp.topic] = ends[tp] - at
        return lag
    finally:
        await consumer.stop()
        await admin.close()


def wait_idle(app: App, bootstrap: str, group: str, topics: list[str], timeout: float = 60) -> None:
    """Until the app has processed (and committed) everything on the topics it reads."""
    deadline = time.monotonic() + timeout
    lag: dict[str, int] = {}
    while time.monotonic() < deadline:
        if app.fatal_error is not None:
            raise AssertionError(f"the app failed: {app.fatal_error!r}")
        try:
            lag = asyncio.run(_lagging(bootstrap, group, topics))
        except KeyError:  # an internal topic the app has not created yet
            lag = {"(topics not created yet)": 1}
        if not lag:
            return
        time.sleep(0.1)
    threads = [
        (
            t.thread_name,
            t.state.name,
            t.active_tasks,
            t.records_processed,
            sorted(t.topic_partitions),
        )
        for t in app.metadata_for_local_threads()
    ]
    raise AssertionError(
        f"app {group} still lags after {timeout} s: {lag}; {app.state.name}, threads {threads}"
    )


def run_on_broker(
    scenario: dict[str, Any], bootstrap: str, state_dir: Path, *, prefilled: bool
) -> list[Event]:
    """The scenario's output records from a real App on the broker at ``bootstrap``."""
    built = build(scenario["topology"])
    app_id = "onbroker-" + "".join(c if c.isalnum() else "-" for c in scenario["name"])
    for topic in sorted(built.inputs | built.outputs):
        create_topic(bootstrap, topic, 1, **{"retention.ms": "-1"})
    app = App(
        {
            "application.id": app_id,
            "bootstrap.servers": bootstrap,
            "state.dir": str(state_dir),
            "statestore.cache.max.bytes": 0,
            "commit.interval.ms": 20,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        },
        builder=built.builder,
    )
    reads = sorted({t for sub in app.topology.subtopologies(app_id) for t in sub.source_topics})
    if prefilled:
        for step in scenario["steps"]:
            _produce_step(bootstrap, step)
    app.start()
    try:
        if prefilled:
            wait_idle(app, bootstrap, app_id, reads)
        else:
            for step in scenario["steps"]:
                _produce_step(bootstrap, step)
                wait_idle(app, bootstrap, app_id, reads)
    finally:
        app.stop()
    events: list[Event] = []
    for topic in sorted(built.outputs):
        raw = topic.endswith(WIRE_SUFFIX)  # windowed keys as written: hex, as the driver's
        events.extend(
            Event(
                -1,
                topic,
                (r.key.hex() if raw and r.key is not None else KEYS.deserialize(r.key)),
                VALUES.deserialize(r.value),
                r.timestamp,
            )
            for r in read_all(bootstrap, topic)
        )
    return events
