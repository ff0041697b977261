"""The Apache Kafka launcher's bad cases: no Maven Central, no java/mvn, a port taken, a
broker that dies (the fixture reports it, then brings it back)."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamrt.dev import apache_kafka as ak
from streamrt.dev.apache_kafka import (
    ApacheKafka,
    BrokerDied,
    KafkaUnavailable,
    PortTaken,
    ensure_libs,
)
from tests.apache_kafka.support import healthy

pytestmark = pytest.mark.kafka

needs_mvn = pytest.mark.skipif(shutil.which("mvn") is None, reason="mvn is not on PATH")


@pytest.fixture
def listening() -> Iterator[int]:
    """A port some other program is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@needs_mvn
def test_maven_central_unreachable_is_a_clear_error_and_caches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMRT_CACHE_DIR", str(tmp_path / "cache"))
    with socket.socket() as closed:  # a port nobody listens on: "Central" refuses
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    settings = tmp_path / "settings.xml"
    settings.write_text(
        "<settings><mirrors><mirror><id>down</id><mirrorOf>*</mirrorOf>"
        f"<url>http://127.0.0.1:{dead}/maven2</url></mirror></mirrors></settings>"
    )
    args = ["-s", str(settings), f"-Dmaven.repo.local={tmp_path / 'm2'}"]
    with pytest.raises(KafkaUnavailable) as exc:
        ensure_libs("4.3.1", maven_args=args, timeout=120)
    assert "could not assemble Apache Kafka 4.3.1 from Maven Central" in str(exc.value)
    assert not (tmp_path / "cache" / "apache-kafka-4.3.1" / "libs").exists()
    assert not list((tmp_path / "cache" / "apache-kafka-4.3.1").glob("libs.partial-*"))


def test_missing_java_or_mvn_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMRT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaUnavailable, match="needs java and mvn on PATH"):
        ensure_libs("4.3.1")


def test_a_requested_port_that_is_taken_is_refused_before_any_jvm_starts(
    tmp_path: Path, listening: int
) -> None:
    kafka = ApacheKafka(1, work_dir=tmp_path, port=listening)
    with pytest.raises(PortTaken, match=f"127.0.0.1:{listening} is already in use"):
        kafka.start()
    assert kafka.nodes == []


def test_a_broker_that_cannot_bind_fails_with_its_log_tail(
    tmp_path: Path, listening: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        ensure_libs()
    except KafkaUnavailable as exc:
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    # Someone grabs the port between the check and the JVM's bind.
    monkeypatch.setattr(ak, "port_is_free", lambda port: True)
    kafka = ApacheKafka(1, work_dir=tmp_path, port=listening)
    with pytest.raises(PortTaken) as exc:
        kafka.start(timeout=60)
    assert "exited with" in str(exc.value) and "server.log" in str(exc.value)
    assert any(marker in str(exc.value) for marker in ak._BIND_ERRORS)
    assert not any(n.running() for n in kafka.nodes)


def test_a_broker_killed_during_a_test_is_reported_and_restarted(
    _apache_kafka_1: ApacheKafka,
) -> None:
    kafka = _apache_kafka_1
    node = kafka.nodes[0]
    check = healthy(kafka)
    next(check)
    assert node.process is not None
    subprocess.run(["kill", "-9", str(node.process.pid)], check=True, timeout=10)
    node.process.wait(30)
    with pytest.raises(BrokerDied, match="exited with -9"):
        kafka.check_alive()
    with pytest.raises(pytest.fail.Exception, match=f"node 1 \\({node.address}\\) exit -9"):
        next(check)
    # healthy() brought it back on the same port, with its data.
    assert node.running()
    md = AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10)
    assert "__consumer_offsets" in md.topics
