"""``group.protocol=streams`` end to end on the embedded broker: the stream threads are
KIP-1071 streams-group members, the broker assigns the tasks.

Real broker, real apps (the counting app: a stateful count over 8 partitions, RocksDB,
changelogs): two instances split the tasks and count exactly; a third joins and tasks move
with their state (restored from the changelog); it leaves and the others take them back; a
static instance bounced within the session gets its tasks back, restores nothing, and the
other instance is not touched.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamrt.admin.connection import BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.errors import ConfigError
from streamrt.membership.config import MemberConfig
from streamrt.membership.streams_member import StreamsGroupMember
from streamrt.membership.streams_protocol import StreamsIdentity
from streamrt.runtime import App
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.rebalance.streams_topology import streams_topology
from streamrt.runtime.instance.metadata import AppState
from streamrt.wire.api_keys import ApiKey
from tests.kafka_helpers import produce, wait_until, wait_until_async
from tests.runtime.counting_app import make_app
from tests.runtime.test_membership_integration import (
    all_running,
    assigned,
    counts,
    events,
    expected,
    setup_topics,
)

pytestmark = pytest.mark.slow

STREAMS = {
    "group.protocol": "streams",
    "heartbeat.interval.ms": "500",
    "commit.interval.ms": "200",
}


def settings(
    bootstrap: str, state: Path, instance: str | None = None, server: str | None = None
) -> dict[str, str]:
    out = {"bootstrap.servers": bootstrap, "state.dir": str(state), **STREAMS}
    if instance is not None:
        out["group.instance.id"] = instance
    if server is not None:
        out["application.server"] = server
    return out


def split(*apps: App) -> bool:
    """Every thread running and the 8 tasks spread evenly: the broker moved the first
    member's tasks to the others (until then all run, the later ones with none)."""
    sizes = sorted(len(t.active_tasks) for a in apps for t in a.metadata_for_local_threads())
    return all_running(*apps) and sizes[-1] - sizes[0] <= 1


def routed_by_endpoints(a: App, b: App) -> bool:
    """Interactive-query routing from the broker's PartitionsByUserEndpoint: every key of
    the store is sent to the instance that runs its task."""
    clients = a.metadata_for_all_clients()
    if sorted(len(m.tasks) for m in clients) != [4, 4]:
        return False
    own = {7101: set(tasks(a)), 7102: set(tasks(b))}
    for key in (f"k{i}" for i in range(16)):
        owner = a.metadata_for_key("event-counts", key)
        if owner is None or a.queries.task_for_key("event-counts", key) not in own[owner.port or 0]:
            return False
    return True


def tasks(app: App) -> list[str]:
    return sorted(t for th in app.metadata_for_local_threads() for t in th.active_tasks)


def restored(app: App) -> int:
    return sum(t.records_restored for t in app.metadata_for_local_threads())


def rebalances(app: App) -> int:
    return sum(t.rebalances for t in app.metadata_for_local_threads())


def described(port: int) -> Any:
    async def go() -> Any:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            response = await conn.call(
                ApiKey.STREAMS_GROUP_DESCRIBE,
                group_ids=["counting"],
                include_authorized_operations=False,
            )
        finally:
            await conn.close()
        return response.groups[0]

    return asyncio.run(go())


def streams_group(port: int) -> tuple[str, list[str]]:
    """The broker's view: the group's type and its members' instance ids."""

    async def go() -> tuple[str, list[str]]:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            listed = await conn.call(ApiKey.LIST_GROUPS, states_filter=[], types_filter=[])
            described = await conn.call(
                ApiKey.STREAMS_GROUP_DESCRIBE,
                group_ids=["counting"],
                include_authorized_operations=False,
            )
        finally:
            await conn.close()
        kind = {g.group_id: g.group_type for g in listed.groups}.get("counting", "")
        members = sorted(m.instance_id or "" for m in described.groups[0].members)
        return kind, members

    return asyncio.run(go())


def plus(*batches: int) -> dict[str, int]:
    total: Counter[str] = Counter()
    for n in batches:
        total += Counter(expected(n))
    return dict(total)


def test_two_instances_split_a_third_joins_with_state_then_leaves(
    broker: BrokerThread, tmp_path: Path
) -> None:
    setup_topics(broker.bootstrap)
    a = make_app(settings(broker.bootstrap, tmp_path / "a", server="127.0.0.1:7101"))
    b = make_app(settings(broker.bootstrap, tmp_path / "b", server="127.0.0.1:7102"))
    c: App | None = None
    a.start()
    b.start()
    try:
        wait_until(lambda: split(a, b), what="8 tasks split over 2 running instances")
        assert (len(tasks(a)), len(tasks(b))) == (4, 4)
        assert sorted(tasks(a) + tasks(b)) == [f"0_{p}" for p in range(8)]
        assert streams_group(broker.port) == ("streams", ["", ""])
        # Input only once the split is settled: had the first instance counted some before the
        # second joined (a loaded machine), the tasks it gave up would rightly be restored.
        produce(broker.bootstrap, "events", events(160))
        wait_until(lambda: counts(broker.bootstrap) == expected(160), what="first counts")
        assert restored(a) == restored(b) == 0
        wait_until(lambda: routed_by_endpoints(a, b), what="IQ routing from the endpoints")

        third = c = make_app(settings(broker.bootstrap, tmp_path / "c"))
        third.start()
        wait_until(
            lambda: all_running(a, b, third) and len(tasks(third)) >= 2,
            what="tasks moved to the third",
        )
        assert sorted(tasks(a) + tasks(b) + tasks(third)) == [f"0_{p}" for p in range(8)]
        assert restored(third) > 0  # the moved tasks came with their state, from the changelog
        produce(broker.bootstrap, "events", events(80))
        wait_until(lambda: counts(broker.bootstrap) == plus(160, 80), what="counts on three")

        third.stop()  # leaves the group (epoch -1): its tasks go back to a and b
        c = None
        wait_until(lambda: all_running(a, b), what="scale-in: 8 tasks on 2 instances")
        produce(broker.bootstrap, "events", events(80))
        wait_until(lambda: counts(broker.bootstrap) == plus(160, 80, 80), what="after scale-in")
    finally:
        for app in (a, b, c):
            if app is not None:
                app.stop()


def test_a_broker_without_streams_groups_stops_the_app_with_a_clear_error(
    broker_factory: Callable[..., BrokerThread], tmp_path: Path
) -> None:
    broker = broker_factory({"group.coordinator.rebalance.protocols": "classic,consumer"})
    setup_topics(broker.bootstrap)
    app = make_app(settings(broker.bootstrap, tmp_path / "a"))
    app.start()
    try:
        wait_until(lambda: app.state is AppState.ERROR, what="the instance in ERROR")
        message = str(app.fatal_error)
        assert "StreamsGroupHeartbeat counting: UNSUPPORTED_VERSION" in message
        assert "group.protocol=streams needs Apache Kafka 4.2 or later" in message
    finally:
        app.stop()


def test_group_protocol_is_checked() -> None:
    with pytest.raises(
        ConfigError, match=r"group\.protocol 'consumer' must be one of classic, streams"
    ):
        App({"application.id": "x", "group.protocol": "consumer"}).resolve_config()


def test_static_bounce_gets_its_tasks_back_restores_nothing_other_untouched(
    broker: BrokerThread, tmp_path: Path
) -> None:
    setup_topics(broker.bootstrap)
    produce(broker.bootstrap, "events", events(200))
    stay = make_app({**settings(broker.bootstrap, tmp_path / "a", "stay"), "client.tag.zone": "z1"})
    bounce = make_app(settings(broker.bootstrap, tmp_path / "b", "bounce"))
    stay.start()
    bounce.start()
    try:
        wait_until(lambda: split(stay, bounce), what="both running, 4 tasks each")
        wait_until(lambda: counts(broker.bootstrap) == expected(200), what="first counts")
        assert streams_group(broker.port) == ("streams", ["bounce-thread-1", "stay-thread-1"])
        tags = {
            m.instance_id: [(t.key, t.value) for t in m.client_tags]
            for m in described(broker.port).members
        }
        assert tags == {"stay-thread-1": [("zone", "z1")], "bounce-thread-1": []}
        before, kept = tasks(bounce), tasks(stay)
        partitions = assigned(bounce)
        stay_rebalances = rebalances(stay)
        bounce.stop()  # a static member leaves with epoch -2: the broker keeps its tasks
        back = make_app(settings(broker.bootstrap, tmp_path / "b", "bounce"))
        back.start()
        bounce = back
        wait_until(lambda: all_running(stay, back), what="bounced instance running")
        assert tasks(back) == before and assigned(back) == partitions
        assert restored(back) == 0
        assert tasks(stay) == kept and rebalances(stay) == stay_rebalances
        produce(broker.bootstrap, "events", events(100))
        wait_until(lambda: counts(broker.bootstrap) == plus(200, 100), what="after the bounce")
    finally:
        stay.stop()
        bounce.stop()


def standbys(app: App) -> list[str]:
    return sorted(t for th in app.metadata_for_local_threads() for t in th.standby_tasks)


def applied(app: App) -> int:
    return sum(t.standby_records_applied for t in app.metadata_for_local_threads())


def test_standbys_the_broker_assigns_are_kept_warm(
    broker_factory: Callable[..., BrokerThread], tmp_path: Path
) -> None:
    broker = broker_factory({"group.streams.num.standby.replicas": "1"})
    setup_topics(broker.bootstrap)
    produce(broker.bootstrap, "events", events(160))
    a = make_app(settings(broker.bootstrap, tmp_path / "a"))
    b = make_app(settings(broker.bootstrap, tmp_path / "b"))
    a.start()
    b.start()
    try:
        wait_until(lambda: all_running(a, b), what="8 tasks on 2 running instances")
        wait_until(
            lambda: standbys(a) == tasks(b) and standbys(b) == tasks(a) and len(tasks(a)) == 4,
            what="each instance a standby of the other's tasks",
        )
        wait_until(lambda: counts(broker.bootstrap) == expected(160), what="counts")
        wait_until(lambda: applied(a) > 0 and applied(b) > 0, what="standbys applying changelogs")
    finally:
        a.stop()
        b.stop()


def test_exactly_once_commits_at_the_member_epoch(broker: BrokerThread, tmp_path: Path) -> None:
    """TxnOffsetCommit carries the member epoch as the generation (KIP-447 over KIP-1071)."""
    setup_topics(broker.bootstrap)
    produce(broker.bootstrap, "events", events(160))
    eos = {"processing.guarantee": "exactly_once_v2"}
    a = make_app({**settings(broker.bootstrap, tmp_path / "a"), **eos})
    b = make_app({**settings(broker.bootstrap, tmp_path / "b"), **eos})
    a.start()
    b.start()
    try:
        wait_until(lambda: all_running(a, b), what="8 tasks on 2 running instances")
        wait_until(lambda: counts(broker.bootstrap) == expected(160), what="counts")
        produce(broker.bootstrap, "events", events(80))
        wait_until(lambda: counts(broker.bootstrap) == plus(160, 80), what="more counts")
    finally:
        a.stop()
        b.stop()


def test_shutdown_application_from_another_member_stops_the_instance(
    broker: BrokerThread, tmp_path: Path
) -> None:
    """A member that hits a fatal error asks the group to shut down (Kafka Streams'
    SHUTDOWN_APPLICATION): every instance stops, in ERROR, saying why."""
    setup_topics(broker.bootstrap)
    app = make_app(settings(broker.bootstrap, tmp_path / "a"))
    app.start()
    config = MemberConfig(bootstrap_servers=broker.bootstrap, group_id="counting")
    topology = streams_topology(
        ThreadEnv(
            app.resolve_config(),
            app.topology,
            tuple(app.topology.subtopologies("counting")),
            "other",
            False,
            lambda *a, **k: None,
        )
    )

    async def ask() -> None:
        other = StreamsGroupMember(config, topology, StreamsIdentity("other-process"))
        await other.start()
        other.request_shutdown()
        await wait_until_async(lambda: app.state is AppState.ERROR, what="the app in ERROR")
        await other.close()

    try:
        wait_until(lambda: all_running(app), what="the app running")
        asyncio.run(ask())
        assert "SHUTDOWN_APPLICATION" in str(app.fatal_error)
        assert "requested a shutdown for the entire application" in str(app.fatal_error)
    finally:
        app.stop()


def test_stream_threads_in_processes_are_members_of_one_process(
    broker: BrokerThread, tmp_path: Path
) -> None:
    """``stream.thread.mode=process``: each child's thread is a streams-group member; both
    read the instance's process id from its state dir, so the broker sees one process."""
    setup_topics(broker.bootstrap)
    produce(broker.bootstrap, "events", events(160))
    app = make_app(
        {
            **settings(broker.bootstrap, tmp_path / "a", "proc"),
            "num.stream.threads": "2",
            "stream.thread.mode": "process",
        }
    )
    app.app_spec = "tests.runtime.counting_app:app"
    app.start()
    try:
        wait_until(lambda: split(app), timeout=120, what="8 tasks split over 2 thread processes")
        assert [len(t.active_tasks) for t in app.metadata_for_local_threads()] == [4, 4]
        wait_until(lambda: counts(broker.bootstrap) == expected(160), what="counts")
        processes = {m.process_id for m in described(broker.port).members}
        assert len(processes) == 1
    finally:
        app.stop()
