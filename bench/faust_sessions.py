"""The sessions app on faust-streaming: the rolling-deploy benchmark's third contender.

The same fold as ``apps/sessions.py`` (``streamrt/deploy/session_profiles.py``), the same
topics, the same broker, written the way a faust user would: one agent, a RocksDB-backed
``app.Table`` (the rocksdict driver, changelog-backed), ``consumer_group_instance_id`` for
static membership. faust's defaults are kept (one standby replica, at-least-once, its own
partition assignor).

So that one deploy driver and one report measure every contender alike, the worker publishes
the few lifecycle events the report reads to ``<app>-events``, in streamrt's schema
(``docs/events.md``): ``thread_state`` RUNNING when faust says "Worker ready" (recovery done,
streams resumed), ``rebalance_started``/``rebalance_complete`` with the generation,
``restore_complete`` per changelog partition with the records and bytes faust applied to its
active tables, and ``group_leader`` when this worker's assignor ran. Nothing else of faust is
changed.

Run by the deploy driver (``streamrt.deploy.processes``) as
``python bench/faust_sessions.py worker --without-web``, configured through its environment:
``CONTENDER_BOOTSTRAP``, ``CONTENDER_INSTANCE_ID`` (unset: dynamic membership),
``CONTENDER_STATE_DIR`` (faust's datadir) and ``CONTENDER_CONFIG``, a JSON object with
``session.timeout.ms``, ``commit.interval.ms`` and ``num.partitions``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faust
from faust.assignor import PartitionAssignor

from streamrt.deploy.session_profiles import add_click, new_profile

APP_ID = "sessions"
ENV = os.environ.get
INSTANCE_ID = ENV("CONTENDER_INSTANCE_ID") or None
CONFIG: dict[str, str] = json.loads(ENV("CONTENDER_CONFIG", "{}"))
PARTITIONS = int(CONFIG.get("num.partitions", "12"))
SESSION_TIMEOUT_S = int(CONFIG.get("session.timeout.ms", "10000")) / 1000
EVENTS_TOPIC = f"{APP_ID}-events"
time.sleep(float(ENV("SESSIONS_STARTUP_DELAY", "0") or 0))  # the benchmark's slow start-up


class Lifecycle:
    """Collects faust's lifecycle callbacks and produces them as streamrt events."""

    def __init__(self) -> None:
        self.app: faust.App | None = None
        self.instance_id = INSTANCE_ID or f"faust-{os.getpid()}"
        self.restored: Counter[tuple[str, int]] = Counter()
        self.restored_bytes: Counter[tuple[str, int]] = Counter()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.state = "STARTING"

    def transition(self, new: str) -> None:
        self.event("thread_state", old=self.state, new=new)
        self.state = new

    def event(self, type_: str, **fields: Any) -> None:
        record = {
            "v": 1,
            "ts": time.time(),
            "application_id": APP_ID,
            "instance_id": self.instance_id,
            "thread": 1,
            "thread_id": f"{self.instance_id}-thread-1",
            "static": INSTANCE_ID is not None,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "type": type_,
            "fields": fields,
        }
        if self.app is None:
            return
        # Callbacks come from faust's consumer thread as well as from the main loop; the
        # producer belongs to the main loop.
        self.app.loop.call_soon_threadsafe(self._send, record)

    def _send(self, record: dict[str, Any]) -> None:
        assert self.app is not None
        task = asyncio.ensure_future(
            self.app.producer.send(
                EVENTS_TOPIC,
                self.instance_id.encode(),
                json.dumps(record).encode(),
                partition=0,
                timestamp=None,
                headers=None,
            )
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def generation(self) -> int | None:
        app = self.app
        return None if app is None else getattr(app, "consumer_generation_id", None)


LIFECYCLE = Lifecycle()


class SessionsApp(faust.App):
    """``on_rebalance_start``/``on_rebalance_end`` bracket faust's rebalance and recovery."""

    def on_rebalance_start(self) -> None:
        super().on_rebalance_start()
        LIFECYCLE.restored.clear()
        LIFECYCLE.restored_bytes.clear()
        LIFECYCLE.transition("PARTITIONS_REVOKED")
        LIFECYCLE.event("rebalance_started", generation=LIFECYCLE.generation())

    def on_rebalance_end(self) -> None:  # called after recovery: "Worker ready"
        super().on_rebalance_end()
        LIFECYCLE.event("rebalance_complete", generation=LIFECYCLE.generation())
        for (topic, partition), records in sorted(LIFECYCLE.restored.items()):
            LIFECYCLE.event(
                "restore_complete",
                task=f"{topic}-{partition}",
                records=records,
                bytes=LIFECYCLE.restored_bytes[(topic, partition)],
            )
        LIFECYCLE.transition("RUNNING")


class CountingTable(faust.Table):  # type: ignore[misc]
    """Counts changelog records applied to active partitions (standby upkeep is not restore)."""

    def apply_changelog_batch(self, batch: Iterable[Any]) -> None:
        events = list(batch)
        actives = self.app.tables.recovery.active_tps
        for event in events:
            msg = event.message
            if msg.tp in actives:
                key = (msg.topic, msg.partition)
                LIFECYCLE.restored[key] += 1
                LIFECYCLE.restored_bytes[key] += len(msg.key or b"") + len(msg.value or b"")
        super().apply_changelog_batch(events)


class LeaderAwareAssignor(PartitionAssignor):  # type: ignore[misc]
    """faust's own assignor; runs only on the group leader, which it reports."""

    def assign(self, cluster: Any, member_metadata: Any) -> Any:
        # Runs inside the join, on faust's consumer thread, after aiokafka took the generation.
        consumer = self.app.consumer._thread._ensure_consumer()
        generation = consumer._coordinator.generation
        LIFECYCLE.event("group_leader", generation=generation, members=len(member_metadata))
        return super().assign(cluster, member_metadata)


app = SessionsApp(
    APP_ID,
    broker=f"kafka://{ENV('CONTENDER_BOOTSTRAP', '127.0.0.1:9092')}",
    store="rocksdb://",
    datadir=ENV("CONTENDER_STATE_DIR", "faust-data"),
    topic_partitions=PARTITIONS,
    consumer_group_instance_id=INSTANCE_ID,
    broker_session_timeout=SESSION_TIMEOUT_S,
    broker_heartbeat_interval=max(SESSION_TIMEOUT_S / 10, 0.1),
    broker_commit_interval=int(CONFIG.get("commit.interval.ms", "1000")) / 1000,
    Table=CountingTable,
    PartitionAssignor=LeaderAwareAssignor,
    web_enabled=False,
)
LIFECYCLE.app = app

clicks = app.topic("clicks", key_serializer="raw", value_serializer="json")
profiles_out = app.topic("session-profiles", key_serializer="raw", value_serializer="json")
profiles = app.Table("profiles", default=None, partitions=PARTITIONS)


@app.agent(clicks)
async def fold(stream: Any) -> None:
    async for key, click in stream.items():
        user = key.decode()
        profile = add_click(user, click, profiles.get(user) or new_profile())
        profiles[user] = profile
        await profiles_out.send(key=key, value=profile)


if __name__ == "__main__":
    app.main()
