"""The Kafka Streams peer (``bench/kafka-streams/``): build it once with Maven, run it with java.

Nothing binary is committed: ``mvn -q -B package`` writes ``target/kafka-streams-peer.jar``
and its dependencies (kafka-streams 4.3.1, the broker's version, with rocksdbjni) to
``target/lib/`` from Maven Central; the jar is rebuilt when a source file is newer.
"""

from __future__ import annotations

from pathlib import Path

from streamrt.dev import maven_jar

PROJECT = Path(__file__).resolve().parent / "kafka-streams"
JAR = PROJECT / "target" / "kafka-streams-peer.jar"
# Small heap (RocksDB lives off-heap), the default collector; log lines carry the time of day
# (slf4j-simple), to line up a restart's steps with the broker's request log.
JVM_FLAGS = (
    "-Xms256m",
    "-Xmx512m",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
)


class KafkaStreamsUnavailable(RuntimeError):
    """java/mvn missing or the build failed (e.g. Maven Central unreachable)."""


def ensure_jar(timeout: float = 900.0) -> Path:
    """The built jar; builds it (Maven downloads on first use) if missing or stale."""
    return maven_jar.ensure_jar(
        PROJECT, JAR, "the Kafka Streams peer", KafkaStreamsUnavailable, timeout
    )


def command(mode: str, *args: str) -> list[str]:
    """``java ... -jar kafka-streams-peer.jar <mode> <args>``.

    Modes: ``peers``, ``sessions``, ``rebalance`` (see PeerApp.java). ``peers`` takes any
    StreamsConfig key from ``PEERS_CONFIG`` (JSON): ``{"group.protocol": "streams"}`` makes it a
    KIP-1071 streams-group member (tests/broker/test_streams_groups_kafka_streams.py)."""
    return ["java", *JVM_FLAGS, "-jar", str(ensure_jar()), mode, *args]
