"""The contenders of bench/rebalance_cooperative.py as processes, and the changes made to them.

Both run the same topology (count per key, RocksDB store with a changelog, exactly_once_v2,
record cache off, commit every 100 ms, session 6 s, static group.instance.id per instance,
2 stream threads, moves restored at once) as one process per instance:

- ``streamrt``: ``streamrt run rebalance_cooperative:app`` with streamrt's own group
  membership (the only one); eager is ``upgrade.from=2.3``.
- ``kafka-streams``: Kafka Streams 4.3.1, ``PeerApp rebalance`` (bench/kafka-streams/,
  RebalanceApp.java), cooperative only: Kafka Streams 4.2 removed the eager protocol
  (``upgrade.from`` accepts 2.4 and later; its assignor supports COOPERATIVE only).

Each instance can add a stream thread and remove stopped members from the group, each the way
its runtime offers it: streamrt through its REST endpoint and ``streamrt instances remove``,
Kafka Streams through ``addStreamThread()`` and the Admin API's
``removeMembersFromConsumerGroup``, sent as a line on the JVM's stdin.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Protocol

from _broker import free_port

APP_ID = "rebal"
INPUT, OUTPUT = "rb-events", "rb-counts"
TOKEN = "bench-token"  # `instances remove` and `threads:add` are mutating REST calls
COMMON = {
    "processing.guarantee": "exactly_once_v2",
    "statestore.cache.max.bytes": "0",
    "commit.interval.ms": "100",
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "500",
    "num.stream.threads": "2",
    # moves happen at once (restoring), not after a probing rebalance 10 minutes later
    "acceptable.recovery.lag": "100000000",
}
SETTINGS = {**COMMON, "rest.auth.token": TOKEN}  # streamrt's
HERE = Path(__file__).resolve()
CONTENDERS = ("streamrt", "kafka-streams")
# "streams": group.protocol=streams (KIP-1071 streams groups, the broker assigns the tasks)
PROTOCOLS = {
    "streamrt": ("eager", "cooperative", "streams"),
    "kafka-streams": ("cooperative",),
}
_PROTOCOL_SETTINGS = {"eager": {"upgrade.from": "2.3"}, "streams": {"group.protocol": "streams"}}


class Instance(Protocol):
    name: str
    proc: subprocess.Popen[bytes]

    def member_ids(self) -> list[str]: ...

    def add_thread(self) -> None: ...

    def remove_members(self, ids: list[str]) -> None: ...

    def stop(self, sig: int = signal.SIGTERM) -> None: ...


def _stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class StreamrtInstance:
    """One ``streamrt run`` process with a REST endpoint."""

    def __init__(self, name: str, bootstrap: str, work: Path, protocol: str) -> None:
        self.name, self.rest = name, free_port()
        cmd = [sys.executable, "-m", "streamrt.cli", "--log-level", "WARNING", "run"]
        cmd += ["rebalance_cooperative:app", "--instance-id", name, "--bootstrap-server"]
        cmd += [bootstrap, "--state-dir", str(work / name)]
        cmd += ["--application-server", f"127.0.0.1:{self.rest}"]
        settings = dict(SETTINGS, **_PROTOCOL_SETTINGS.get(protocol, {}))
        for k, v in settings.items():
            cmd += ["--config", f"{k}={v}"]
        env = {
            **os.environ,
            "PYTHONPATH": f"{HERE.parents[1]}{os.pathsep}{HERE.parent}",
        }
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)

    def member_ids(self) -> list[str]:
        return [f"{self.name}-thread-{n}" for n in (1, 2)]

    def add_thread(self) -> None:
        """``POST /v1/threads:add`` (Kafka Streams' addStreamThread)."""
        import httpx

        url = f"http://127.0.0.1:{self.rest}/v1/threads:add"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        httpx.post(url, headers=auth, timeout=30).raise_for_status()

    def remove_members(self, ids: list[str]) -> None:
        """``streamrt instances remove`` through this instance's REST endpoint."""
        cmd = [sys.executable, "-m", "streamrt.cli", "instances", "remove"]
        cmd += ["--url", f"http://127.0.0.1:{self.rest}", "--token", TOKEN]
        cmd += [f"--group-instance-id={i}" for i in ids]
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(HERE.parents[1])},
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"instances remove failed: {done.stdout}{done.stderr}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        _stop(self.proc, sig)


def kafka_streams_config(protocol: str) -> dict[str, str]:
    """The Kafka Streams configs (Kafka's names; consumer settings unprefixed reach its
    consumers)."""
    if protocol != "cooperative":
        raise ValueError("Kafka Streams 4.3.1 rebalances cooperatively only")
    return {"application.id": APP_ID, **COMMON}


class KafkaStreamsInstance:
    """One Kafka Streams JVM (``PeerApp rebalance``), commanded through its stdin; its log
    (slf4j-simple, INFO) goes to ``<work>/<name>.log``."""

    def __init__(self, name: str, bootstrap: str, work: Path, protocol: str) -> None:
        from _kafka_streams import command

        self.name = name
        env = {
            **os.environ,
            "CONTENDER_INSTANCE_ID": name,
            "CONTENDER_BOOTSTRAP": bootstrap,
            "CONTENDER_STATE_DIR": str(work / name),
            "CONTENDER_CONFIG": json.dumps(kafka_streams_config(protocol)),
            "REBAL_INPUT": INPUT,
            "REBAL_OUTPUT": OUTPUT,
        }
        self.log_path = work / f"{name}.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                command("rebalance"),
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )

    def member_ids(self) -> list[str]:
        return [f"{self.name}-{n}" for n in (1, 2)]

    def _command(self, line: str, timeout: float = 60.0) -> str:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(line.encode() + b"\n")
        stdin.flush()
        answer = _read_line(stdout, timeout)
        if not answer.startswith("ok"):
            raise RuntimeError(f"{self.name}: {line!r} answered {answer!r} (log {self.log_path})")
        return answer

    def add_thread(self) -> None:
        self._command("add-thread")

    def remove_members(self, ids: list[str]) -> None:
        self._command("remove-members " + ",".join(ids))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        _stop(self.proc, sig)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def _read_line(stream: IO[bytes], timeout: float) -> str:
    """The next ``ok``/``error`` answer line (anything else the JVM printed is skipped)."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([stream], [], [], left)
        if not ready:
            break
        line = stream.readline().decode().strip()
        if not line:
            return "(stdout closed)"
        if line.startswith(("ok", "error")):
            return line
    return f"(no answer within {timeout:g} s)"


def start(contender: str, name: str, bootstrap: str, work: Path, protocol: str) -> Instance:
    kind = StreamrtInstance if contender == "streamrt" else KafkaStreamsInstance
    return kind(name, bootstrap, work, protocol)


def change(
    scenario: str,
    instances: dict[str, Instance],
    spawn: Callable[[str], Instance],
) -> set[str]:
    """Make the scenario's change; the instances alive afterwards.

    (a) a 4th instance; (b) i3 stopped, then its members removed through i1; (c) i3
    SIGKILLed, not restarted (its partitions move after session.timeout.ms); (d) one more
    stream thread on i1."""
    if scenario == "a":
        instances["i4"] = spawn("i4")
    elif scenario == "b":
        instances["i3"].stop()
        instances["i1"].remove_members(instances["i3"].member_ids())
    elif scenario == "c":
        instances["i3"].stop(signal.SIGKILL)
    elif scenario == "d":
        instances["i1"].add_thread()
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
    return {n for n in instances if not (scenario in "bc" and n == "i3")}
