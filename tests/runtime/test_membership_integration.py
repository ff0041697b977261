"""Static membership end to end: sharing, bounce without restore, crash, lost disk, fencing.

On both brokers (``any_broker``: embedded, Apache Kafka), real aiokafka, real RocksDB, real
subprocesses where a process must die.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from streamrt.errors import ErrorCode, KafkaError
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until
from tests.runtime.counting_app import make_app

pytestmark = pytest.mark.slow

APP_ID = "counting"
SESSION = {
    "session.timeout.ms": "8000",
    "heartbeat.interval.ms": "500",
    "commit.interval.ms": "200",
}


def settings(bootstrap: str, state: Path, instance: str, threads: int = 1) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": instance,
        "num.stream.threads": str(threads),
        **SESSION,
    }


def events(n: int, keys: int = 16) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % keys}".encode(), b"e") for i in range(n)]


def expected(n: int, keys: int = 16) -> dict[str, int]:
    return dict(Counter(f"k{i % keys}" for i in range(n)))


def counts(bootstrap: str) -> dict[str, int]:
    return {
        k.decode(): struct.unpack(">q", v)[0]
        for k, v in latest_by_key(read_all(bootstrap, "event-counts-out")).items()
    }


def setup_topics(bootstrap: str, partitions: int = 8) -> None:
    create_topic(bootstrap, "events", partitions)
    create_topic(bootstrap, "event-counts-out", partitions)


def assigned(app: App) -> list[tuple[str, int]]:
    return sorted(p for t in app.metadata_for_local_threads() for p in t.topic_partitions)


def all_running(*apps: App, partitions: int = 8) -> bool:
    total = sum(len(assigned(a)) for a in apps)
    states = {t.state.name for a in apps for t in a.metadata_for_local_threads()}
    return total == partitions and states == {"RUNNING"}


def group_instance_ids(bootstrap: str) -> list[str]:
    """The coordinator's view (DescribeGroups v4+ via streamrt's admin client: aiokafka's
    DescribeGroups stops at v3, before group_instance_id)."""
    from streamrt.admin.client import AdminClient

    async def go() -> list[str]:
        async with AdminClient(bootstrap) as admin:
            try:
                groups = await admin.describe_groups(["counting"])
            except KafkaError as exc:
                # Apache Kafka 4 (DescribeGroups v6, KIP-1043) says so for a group not made yet
                if exc.code != ErrorCode.group_id_not_found:
                    raise
                return []
        return sorted(m.group_instance_id or "" for m in groups["counting"].members)

    return asyncio.run(go())


def test_two_instances_two_threads_share_eight_partitions(any_broker, tmp_path) -> None:
    broker = any_broker
    setup_topics(broker.bootstrap)
    produce(broker.bootstrap, "events", events(160))
    a = make_app(settings(broker.bootstrap, tmp_path / "a", "inst-a", 2))
    b = make_app(settings(broker.bootstrap, tmp_path / "b", "inst-b", 2))
    a.start()
    b.start()
    try:
        wait_until(lambda: all_running(a, b), what="8 partitions on 4 running threads")
        per_thread = [
            len(t.topic_partitions) for x in (a, b) for t in x.metadata_for_local_threads()
        ]
        assert per_thread == [2, 2, 2, 2]
        assert group_instance_ids(broker.bootstrap) == [
            "inst-a-thread-1",
            "inst-a-thread-2",
            "inst-b-thread-1",
            "inst-b-thread-2",
        ]
        wait_until(
            lambda: {m.instance_id for m in a.metadata_for_all_clients()} == {"inst-a", "inst-b"},
            what="cluster metadata",
        )
        meta = {m.instance_id: m for m in a.metadata_for_all_clients()}
        assert meta["inst-b"].thread_instance_ids == ("inst-b-thread-1", "inst-b-thread-2")
        assert meta["inst-b"].state_store_names == ("event-counts",)
        wait_until(lambda: counts(broker.bootstrap) == expected(160), what="counts")
    finally:
        a.stop()
        b.stop()


def test_bounce_within_session_timeout_restores_nothing(any_broker, tmp_path) -> None:
    broker = any_broker
    setup_topics(broker.bootstrap)
    produce(broker.bootstrap, "events", events(200))
    stay = make_app(settings(broker.bootstrap, tmp_path / "a", "stay", 1))
    bounce = make_app(settings(broker.bootstrap, tmp_path / "b", "bounce", 1))
    stay.start()
    bounce.start()
    try:
        wait_until(lambda: all_running(stay, bounce), what="both running")
        wait_until(lambda: counts(broker.bootstrap) == expected(200), what="first counts")
        before = assigned(bounce)
        rebalances = stay.metadata_for_local_threads()[0].rebalances
        bounce.stop()
        back = make_app(settings(broker.bootstrap, tmp_path / "b", "bounce", 1))
        back.start()
        bounce = back
        wait_until(lambda: all_running(stay, back), what="bounced instance running")
        assert assigned(back) == before
        assert back.metadata_for_local_threads()[0].records_restored == 0
        assert stay.metadata_for_local_threads()[0].rebalances == rebalances
        produce(broker.bootstrap, "events", events(100))
        final = dict(Counter(expected(200)) + Counter(expected(100)))
        wait_until(lambda: counts(broker.bootstrap) == final, what="counts after the bounce")
    finally:
        stay.stop()
        bounce.stop()


def run_process(bootstrap: str, state: Path, instance: str) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "streamrt.cli",
        "run",
        "tests.runtime.counting_app:app",
        "--instance-id",
        instance,
        "--bootstrap-server",
        bootstrap,
        "--state-dir",
        str(state),
    ]
    for key, value in SESSION.items():
        args += ["--config", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )


def committed_input(bootstrap: str) -> int:
    """Sum of the app group's committed offsets on the input topic."""
    from streamrt.admin.client import AdminClient

    async def go() -> int:
        async with AdminClient(bootstrap) as admin:
            offsets = await admin.fetch_committed_offsets(APP_ID)
        return sum(o.offset for (topic, _), o in offsets.items() if topic == "events")

    return asyncio.run(go())


def test_crash_restores_only_the_changelog_tail(any_broker, tmp_path) -> None:
    broker = any_broker
    setup_topics(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, "events", events(300))
    proc = run_process(broker.bootstrap, tmp_path / "s", "crashy")
    try:
        wait_until(lambda: counts(broker.bootstrap) == expected(300), what="counts before crash")
        # A checkpoint exists once the input offsets are committed (stores flush first) ...
        wait_until(lambda: committed_input(broker.bootstrap) == 300, what="first checkpoint")
        # ... and the crash leaves a changelog tail after it.
        produce(broker.bootstrap, "events", events(40))
        final_before = Counter(expected(300)) + Counter(expected(40))
        wait_until(
            lambda: all(counts(broker.bootstrap).get(k, 0) >= v for k, v in final_before.items()),
            what="tail processed",
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    changelog = len(read_all(broker.bootstrap, "counting-event-counts-changelog"))
    app = make_app(settings(broker.bootstrap, tmp_path / "s", "crashy", 1))
    app.start()
    try:
        wait_until(lambda: all_running(app, partitions=2), what="restarted")
        restored = app.metadata_for_local_threads()[0].records_restored
        assert restored < changelog  # only what came after the last checkpoint
        produce(broker.bootstrap, "events", events(32))
        final = Counter(expected(300)) + Counter(expected(40)) + Counter(expected(32))
        # at-least-once: nothing lost; re-processing after a crash may only add
        wait_until(
            lambda: all(counts(broker.bootstrap).get(k, 0) >= v for k, v in final.items()),
            what="no effect lost",
        )
    finally:
        app.stop()


def test_lost_disk_restores_everything(any_broker, tmp_path) -> None:
    broker = any_broker
    setup_topics(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, "events", events(120))
    app = make_app(settings(broker.bootstrap, tmp_path / "s", "disk", 1))
    app.start()
    try:
        wait_until(lambda: counts(broker.bootstrap) == expected(120), what="counts")
    finally:
        app.stop()
    shutil.rmtree(tmp_path / "s")
    changelog = read_all(broker.bootstrap, "counting-event-counts-changelog")
    app = make_app(settings(broker.bootstrap, tmp_path / "s", "disk", 1))
    app.start()
    try:
        wait_until(lambda: all_running(app, partitions=2), what="restarted")
        assert app.metadata_for_local_threads()[0].records_restored == len(changelog)
        produce(broker.bootstrap, "events", events(16))
        final = dict(Counter(expected(120)) + Counter(expected(16)))
        wait_until(lambda: counts(broker.bootstrap) == final, what="counts after full restore")
    finally:
        app.stop()


def test_duplicate_instance_id_stops_one_process_with_a_clear_message(any_broker, tmp_path) -> None:
    broker = any_broker
    setup_topics(broker.bootstrap, partitions=2)
    first = run_process(broker.bootstrap, tmp_path / "one", "twin")
    try:
        wait_until(
            lambda: group_instance_ids(broker.bootstrap) == ["twin-thread-1"],
            what="first process joined",
        )
        second = run_process(broker.bootstrap, tmp_path / "two", "twin")
        try:
            wait_until(
                lambda: first.poll() is not None or second.poll() is not None,
                timeout=60,
                what="one process to exit",
            )
            loser = first if first.poll() is not None else second
            assert loser.returncode != 0
            assert loser.stderr is not None
            err = loser.stderr.read()
            assert "FENCED_INSTANCE_ID" in err and "twin-thread-1" in err
        finally:
            second.terminate()
            second.wait(30)
    finally:
        first.terminate()
        first.wait(30)
