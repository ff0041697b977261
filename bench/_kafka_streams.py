"""The Kafka Streams peer (``bench/kafka-streams/``): build it once with Maven, run it with java.

Nothing binary is committed: ``mvn -q -B package`` writes ``target/kafka-streams-peer.jar``
and its dependencies (kafka-streams 4.3.1, the broker's version, with rocksdbjni) to
``target/lib/`` from Maven Central; the jar is rebuilt when a source file is newer.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from streamrt.dev.maven_libs import maven_lock

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


def _stale() -> bool:
    if not JAR.exists():
        return True
    built = JAR.stat().st_mtime
    sources = [PROJECT / "pom.xml", *PROJECT.rglob("src/**/*.java")]
    return any(p.stat().st_mtime > built for p in sources)


def ensure_jar(timeout: float = 900.0) -> Path:
    """The built jar; builds it (Maven downloads on first use) if missing or stale."""
    if not _stale():
        return JAR
    missing = [t for t in ("java", "mvn") if shutil.which(t) is None]
    if missing:
        raise KafkaStreamsUnavailable(f"the Kafka Streams peer needs {' and '.join(missing)}")
    with maven_lock():  # another test session may be building it right now
        if not _stale():
            return JAR
        done = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(PROJECT / "pom.xml"), "package"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if done.returncode != 0 or not JAR.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
        raise KafkaStreamsUnavailable(
            f"building {PROJECT} failed (mvn exit {done.returncode}; Maven Central "
            f"unreachable?):\n{tail}"
        )
    return JAR


def command(mode: str, *args: str) -> list[str]:
    """``java ... -jar kafka-streams-peer.jar <mode> <args>``.

    Modes: ``peers``, ``sessions``, ``rebalance`` (see PeerApp.java)."""
    return ["java", *JVM_FLAGS, "-jar", str(ensure_jar()), mode, *args]
