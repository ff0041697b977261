"""The Kafka Streams 4.3.1 side: the Java runner in ``runner/``, built once, one JVM a session.

Nothing binary is committed: ``mvn -q -B package`` writes ``runner/target/`` from Maven Central
the first time (about a minute) and again only when a source is newer than the jar. The JVM
reads scenarios on stdin, one a line, and answers with JSON lines ending in a ``done`` line, so
all fixed scenarios and every property-based example go through one ``java`` process.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import IO, Any

from streamrt.dev import maven_jar
from tests.differential.streamrt_side import Event

PROJECT = Path(__file__).resolve().parent / "runner"
JAR = PROJECT / "target" / "kafka-streams-oracle.jar"
# One short-lived, single-threaded client: a small heap and the quick JIT start fastest.
JVM_FLAGS = ("-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class OracleUnavailable(RuntimeError):
    """java/mvn missing, or the build failed (e.g. Maven Central unreachable)."""


def ensure_jar(timeout: float = 900.0) -> Path:
    """The runner's jar, built with Maven if missing or older than its sources."""
    if shutil.which("java") is None:
        raise OracleUnavailable("the Kafka Streams oracle needs java (17 or newer)")
    return maven_jar.ensure_jar(
        PROJECT, JAR, "the Kafka Streams oracle", OracleUnavailable, timeout
    )


def _event(line: dict[str, Any]) -> Event:
    if "error" in line:
        return Event(line["step"], error=line["error"])
    return Event(line["step"], line["topic"], line["key"], line["value"], line["ts"])


class Oracle:
    """One JVM running Kafka Streams' TopologyTestDriver; :meth:`run` a scenario at a time.

    The JVM serves every differential test of a worker, so one death must not fail them all:
    when it is gone (a broken pipe on the write, end of output on the read) :meth:`run` starts a
    new one and asks again, once; the death's exit code and stderr go into the warning, or into
    the error when the second JVM dies on the same scenario.
    """

    def __init__(self) -> None:
        self._jar = ensure_jar()
        self._proc, self._stderr = self._start()
        self.restarts = 0

    def _start(self) -> tuple[subprocess.Popen[str], IO[bytes]]:
        # the JVM's stderr, for the message when it dies; closed with the JVM
        stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        proc = subprocess.Popen(
            ["java", *JVM_FLAGS, "-jar", str(self._jar)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            bufsize=1,
        )
        return proc, stderr

    @property
    def pid(self) -> int:
        """The running JVM's process id."""
        return self._proc.pid

    def run(self, scenario: dict[str, Any]) -> list[Event]:
        """Kafka Streams' output records for ``scenario`` (errors as error events)."""
        try:
            return self._exchange(scenario)
        except _JvmGone as exc:
            first = str(exc)
            self.restarts += 1
            warnings.warn(f"restarting the oracle JVM: {first}", RuntimeWarning, stacklevel=2)
            self._proc, self._stderr = self._start()
        try:
            return self._exchange(scenario)
        except _JvmGone as second:
            raise OracleUnavailable(
                f"scenario {scenario.get('name', '?')!r}: the oracle JVM died twice; first: "
                f"{first}; then: {second}"
            ) from second

    def _exchange(self, scenario: dict[str, Any]) -> list[Event]:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(scenario, separators=(",", ":")) + "\n")
            stdin.flush()
        except OSError as exc:  # BrokenPipeError: the JVM is gone
            raise self._gone(f"writing the scenario failed ({exc!r})") from exc
        events: list[Event] = []
        while True:
            raw = stdout.readline()
            if not raw:
                raise self._gone("its output ended")
            try:
                line = json.loads(raw)
            except ValueError:  # e.g. the JVM's own "could not create the JVM" on stdout
                raise self._gone(f"wrote {raw.strip()[:200]!r}, not a JSON line") from None
            if line.get("done"):
                return events
            events.append(_event(line))

    def _gone(self, what: str) -> _JvmGone:
        """The dead JVM's exit code and stderr, after reaping it and closing its pipes."""
        try:
            code: int | str = self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # output closed but still alive: end it
            self._proc.kill()
            code = f"killed after hanging, {self._proc.wait()}"
        rest = ""
        if self._proc.stdout is not None and isinstance(code, int):  # exited: the rest is there
            with contextlib.suppress(OSError, ValueError):
                rest = self._proc.stdout.read()[-1000:].strip()
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace")[-2000:].strip() or "(nothing)"
        self._stderr.close()
        return _JvmGone(
            f"the oracle JVM (pid {self._proc.pid}) {what}; exit code {code}; stderr: {tail}"
            + (f"; rest of its stdout: {rest}" if rest else "")
        )

    def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()


class _JvmGone(Exception):
    """The JVM died mid-exchange; :meth:`Oracle.run` restarts it once."""
