"""The Kafka Streams 4.3.1 side: the Java runner in ``runner/``, built once, one JVM a session.

Nothing binary is committed: ``mvn -q -B package`` writes ``runner/target/`` from Maven Central
the first time (about a minute) and again only when a source is newer than the jar. The JVM
reads scenarios on stdin, one a line, and answers with JSON lines ending in a ``done`` line, so
all fixed scenarios and every property-based example go through one ``java`` process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Any

from streamrt.dev.maven_libs import maven_lock
from tests.differential.streamrt_side import Event

PROJECT = Path(__file__).resolve().parent / "runner"
JAR = PROJECT / "target" / "kafka-streams-oracle.jar"
# One short-lived, single-threaded client: a small heap and the quick JIT start fastest.
JVM_FLAGS = ("-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class OracleUnavailable(RuntimeError):
    """java/mvn missing, or the build failed (e.g. Maven Central unreachable)."""


def _stale() -> bool:
    if not JAR.exists():
        return True
    built = JAR.stat().st_mtime
    sources = [PROJECT / "pom.xml", *PROJECT.rglob("src/**/*.java")]
    return any(p.stat().st_mtime > built for p in sources)


def ensure_jar(timeout: float = 900.0) -> Path:
    """The runner's jar, built with Maven if missing or older than its sources."""
    if shutil.which("java") is None:
        raise OracleUnavailable("the Kafka Streams oracle needs java (17 or newer)")
    if not _stale():
        return JAR
    if shutil.which("mvn") is None:
        raise OracleUnavailable("building the Kafka Streams oracle needs mvn")
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
        raise OracleUnavailable(
            f"building {PROJECT} failed (mvn exit {done.returncode}; Maven Central "
            f"unreachable?):\n{tail}"
        )
    return JAR


def _event(line: dict[str, Any]) -> Event:
    if "error" in line:
        return Event(line["step"], error=line["error"])
    return Event(line["step"], line["topic"], line["key"], line["value"], line["ts"])


class Oracle:
    """One JVM running Kafka Streams' TopologyTestDriver; :meth:`run` a scenario at a time."""

    def __init__(self) -> None:
        jar = ensure_jar()
        # the JVM's stderr, for the message when it dies; closed in close(), as the JVM lives on
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            ["java", *JVM_FLAGS, "-jar", str(jar)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )

    def run(self, scenario: dict[str, Any]) -> list[Event]:
        """Kafka Streams' output records for ``scenario`` (errors as error events)."""
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(scenario, separators=(",", ":")) + "\n")
        stdin.flush()
        events: list[Event] = []
        while True:
            raw = stdout.readline()
            if not raw:
                raise OracleUnavailable(f"the oracle JVM exited: {self._stderr_tail()}")
            line = json.loads(raw)
            if line.get("done"):
                return events
            events.append(_event(line))

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-2000:]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()
