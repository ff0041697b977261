"""The proof with someone else's client: Kafka Streams 4.3.1 (Java, from Maven Central) with
``group.protocol=streams`` runs a word count with a repartition against the embedded broker,
two instances sharing the tasks the broker assigns, then one after the other leaves (its tasks
move to the survivor), and writes exactly the expected counts (at least once, and exactly once:
the transactional offset commits of a streams group);
the same test runs on Apache Kafka 4.3.1 (marker ``kafka``), so both brokers give one output.

The peer is ``bench/kafka-streams`` (its ``peers`` mode, workload ``wordcount``, the
``group.protocol`` set through ``PEERS_CONFIG``). The broker creates the repartition and
changelog topics; the record cache is off, so every update is emitted: under exactly-once each
word's counts are 1, 2, ..., n once each; under at-least-once each of 1..n at least once (a
commit that races the leave's epoch bump passes on both brokers for the tasks the committer ran
at its older epoch, per-task assignment epochs as Kafka 4.3.1 keeps them, KAFKA-19779; one still
refused, or an instance closing its tasks dirty for another reason, counts their uncommitted
input again, which at-least-once allows). Skips only when java or mvn is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from bench._kafka_streams import command
from streamrt.admin.connection import BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.wire.api_keys import ApiKey
from tests.kafka_helpers import create_topic, produce, read_all, wait_until

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("mvn") is None,
    reason="Kafka Streams needs java and mvn",
)

APP = "wc-streams"
VOCABULARY = ("kafka", "streams", "group", "task", "epoch", "static", "member", "broker")


@pytest.fixture(
    params=[
        "embedded",
        "embedded-exactly-once",
        pytest.param("apache-kafka", marks=pytest.mark.kafka),
    ]
)
def bootstrap(
    request: pytest.FixtureRequest, broker_factory: Callable[..., BrokerThread]
) -> Iterator[str]:
    """The embedded broker (heartbeats every 500 ms, for a quick test; also with
    ``exactly_once_v2``: transactional offsets of a streams group) or Apache Kafka 4.3.1."""
    if request.param.startswith("embedded"):
        yield broker_factory({"group.streams.heartbeat.interval.ms": "500"}).bootstrap
        return
    from tests.apache_kafka.support import clean_slate

    kafka = request.getfixturevalue("apache_kafka")
    yield kafka.bootstrap
    # the instances have left (SIGTERM closes them): the streams group goes first, as the
    # shared clean-up describes groups with the classic API only
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})

    def deleted() -> bool:
        try:
            admin.delete_consumer_groups([APP], request_timeout=30)[APP].result(30)
        except Exception as exc:  # GROUP_ID_NOT_FOUND once gone; NON_EMPTY_GROUP meanwhile
            return "GROUP_ID_NOT_FOUND" in str(exc)
        return True

    wait_until(deleted, timeout=60, what="the streams group deleted")
    clean_slate(kafka.bootstrap)


def _describe(bootstrap: str) -> Any:
    host, port = bootstrap.rsplit(",", 1)[0].rsplit(":", 1)

    async def go() -> Any:
        conn = await BrokerConnection.open(host, int(port))
        try:
            resp = await conn.call(
                ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[APP], include_authorized_operations=False
            )
            return resp.groups[0]
        finally:
            await conn.close()

    return asyncio.run(go())


@pytest.fixture
def instances(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[str, int], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    config = {"group.protocol": "streams", "commit.interval.ms": "200"}
    if request.node.callspec.params["bootstrap"].endswith("exactly-once"):
        config["processing.guarantee"] = "exactly_once_v2"

    def start(bootstrap: str, n: int) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "PEERS_WORKLOAD": "wordcount",
            "PEERS_APP_ID": APP,
            "PEERS_BOOTSTRAP": bootstrap,
            "PEERS_STATE_DIR": str(tmp_path / f"state-{n}"),
            "PEERS_IN": "lines",
            "PEERS_OUT": "counts",
            "PEERS_CONFIG": json.dumps(config),
        }
        log = (tmp_path / f"instance-{n}.log").open("wb")
        proc = subprocess.Popen(command("peers"), env=env, stdout=log, stderr=subprocess.STDOUT)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.send_signal(signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_two_kafka_streams_instances_count_words_over_a_streams_group(
    bootstrap: str,
    instances: Callable[[str, int], subprocess.Popen[bytes]],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    exactly_once = request.node.callspec.params["bootstrap"].endswith("exactly-once")
    create_topic(bootstrap, "lines", partitions=4)
    create_topic(bootstrap, "counts", partitions=4)
    procs = [instances(bootstrap, n) for n in (1, 2)]

    def two_members_stable() -> bool:
        for proc in procs:
            assert proc.poll() is None, (tmp_path / "instance-1.log").read_text()[-3000:]
        group = _describe(bootstrap)
        return group.group_state == "Stable" and len(group.members) == 2

    wait_until(two_members_stable, timeout=90, what="two Kafka Streams members, stable")
    group = _describe(bootstrap)
    owned = [sum(len(t.partitions) for t in m.assignment.active_tasks) for m in group.members]
    assert sorted(owned) == [4, 4]  # 8 tasks (2 subtopologies x 4 partitions) over 2 members
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
    for internal in (f"{APP}-words-repartition", f"{APP}-counts-changelog"):
        assert len(topics[internal].partitions) == 4  # created by the broker

    rng = random.Random(20261128)
    lines = [" ".join(rng.choice(VOCABULARY) for _ in range(5)) for _ in range(400)]
    expected: Counter[str] = Counter()

    def emitted() -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for r in read_all(bootstrap, "counts"):
            out.setdefault(r.key.decode(), []).append(int(r.value))
        return out

    def counted(batch: list[str], first: int) -> None:
        expected.update(w for line in batch for w in line.split())
        keyed = [(str(first + i).encode(), ln.encode()) for i, ln in enumerate(batch)]
        produce(bootstrap, "lines", keyed)

        def complete() -> bool:
            seen = emitted()
            if exactly_once:
                return all(max(seen.get(w, [0])) == n for w, n in expected.items())
            return all(max(seen.get(w, [0])) >= n for w, n in expected.items())

        wait_until(complete, timeout=90, what="every word counted")

    counted(lines[:200], 0)
    # scale in: the second instance leaves (SIGTERM closes it: a leave heartbeat), its tasks
    # are revoked and reassigned to the first one, which counts on from their changelogs
    procs[1].send_signal(signal.SIGTERM)
    procs[1].wait(timeout=60)  # 143: the JVM ran its shutdown hook on SIGTERM
    counted(lines[200:], 200)
    group = _describe(bootstrap)
    assert len(group.members) == 1
    assert sum(len(t.partitions) for t in group.members[0].assignment.active_tasks) == 8
    seen = emitted()
    assert set(seen) == set(expected)
    for word, n in expected.items():
        if exactly_once:
            assert sorted(seen[word]) == list(range(1, n + 1)), word  # each update once
        else:  # none lost: every count up to n emitted (some again after a refused commit)
            assert set(range(1, n + 1)) <= set(seen[word]), word
