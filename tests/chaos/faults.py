"""What the chaos test breaks: the broker (embedded or a 3-node Apache Kafka) and the app's
instances, each behind a small class that knows how to kill, stop and bring it back.

A fault is one :class:`Fault` (its kind, its target, how long it lasts); :func:`schedule` draws a
seeded sequence of them, so a failing run is replayed with the same seed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench._broker import free_port

__all__ = (
    "BROKER_KINDS",
    "INSTANCE_KINDS",
    "ApacheCluster",
    "Cluster",
    "EmbeddedCluster",
    "Fault",
    "Instance",
    "schedule",
)

REPO = Path(__file__).resolve().parents[2]

# instance faults: SIGKILL and restart; SIGTERM (clean stop) and restart; SIGSTOP past the
# session timeout, then SIGCONT (a zombie: its partitions went elsewhere meanwhile)
INSTANCE_KINDS = ("instance-kill", "instance-term", "zombie")
# broker faults: SIGKILL and restart on the same port and data; SIGSTOP, then SIGCONT
BROKER_KINDS = ("broker-kill", "broker-pause")


@dataclass(frozen=True)
class Fault:
    kind: str
    target: int  # instance index for instance faults; ignored for broker faults
    down_s: float  # how long the target is down (killed) or stopped


def schedule(
    seed: int, count: int, kinds: tuple[str, ...], instances: int, zombie_s: float
) -> list[Fault]:
    """``count`` faults drawn from ``kinds`` with ``seed``: each kind once before any repeats
    (so a short run still covers every kind), in a seeded order."""
    rng = random.Random(seed)
    order: list[str] = []
    while len(order) < count:
        batch = list(kinds)
        rng.shuffle(batch)
        order.extend(batch)
    faults = []
    for kind in order[:count]:
        down = zombie_s if kind == "zombie" else round(rng.uniform(1.0, 3.0), 1)
        faults.append(Fault(kind, rng.randrange(instances), down))
    return faults


class Cluster(Protocol):
    bootstrap: str

    def kill(self, down_s: float, rng: random.Random) -> str:
        """SIGKILL a broker, keep it down ``down_s``, start it again; say which."""
        ...

    def pause(self, down_s: float, rng: random.Random) -> str:
        """SIGSTOP a broker for ``down_s``, then SIGCONT; say which."""
        ...

    def close(self) -> None: ...


class EmbeddedCluster:
    """``streamrt broker`` as a subprocess with ``--fsync always`` (acks=all is on disk)."""

    def __init__(self, work: Path) -> None:
        self.data = work / "broker"
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.log = (work / "broker.log").open("ab")
        self.proc = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        args = [sys.executable, "-m", "streamrt.cli", "--log-level", "WARNING", "broker"]
        args += ["--port", str(self.port), "--data-dir", str(self.data), "--fsync", "always"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, env=env)
        assert proc.stdout is not None
        proc.stdout.readline()  # it prints one line once it listens
        return proc

    def kill(self, down_s: float, rng: random.Random) -> str:
        self.proc.kill()
        self.proc.wait()
        time.sleep(down_s)
        self.proc = self._start()
        return "broker"

    def pause(self, down_s: float, rng: random.Random) -> str:
        self.proc.send_signal(signal.SIGSTOP)
        time.sleep(down_s)
        self.proc.send_signal(signal.SIGCONT)
        return "broker"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class ApacheCluster:
    """Apache Kafka 4.3.1, 3 brokers (KRaft, combined nodes); a fault hits a partition
    leader of the input topic, drawn by the seed."""

    def __init__(self, work: Path) -> None:
        from streamrt.dev.apache_kafka import ApacheKafka

        self.kafka = ApacheKafka(
            3,
            work_dir=work / "kafka",
            overrides={
                "offsets.topic.replication.factor": "3",
                "transaction.state.log.replication.factor": "3",
                "transaction.state.log.min.isr": "2",
                "default.replication.factor": "3",
                "min.insync.replicas": "2",
            },
        ).start()
        self.bootstrap = self.kafka.bootstrap

    def _leader(self, rng: random.Random) -> int:
        from confluent_kafka.admin import AdminClient

        from tests.chaos.chaos_app import INPUT

        meta = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(INPUT, timeout=10)
        parts = sorted(meta.topics[INPUT].partitions.values(), key=lambda p: p.id)
        leaders = [p.leader for p in parts if p.leader >= 0]
        return rng.choice(leaders) if leaders else rng.choice([n.node_id for n in self.kafka.nodes])

    def kill(self, down_s: float, rng: random.Random) -> str:
        node = self._leader(rng)
        self.kafka.stop_node(node, kill=True)
        time.sleep(down_s)
        self.kafka.start_node(node)
        return f"broker {node}"

    def pause(self, down_s: float, rng: random.Random) -> str:
        node = self._leader(rng)
        proc = self.kafka.node(node).process
        assert proc is not None
        proc.send_signal(signal.SIGSTOP)
        time.sleep(down_s)
        proc.send_signal(signal.SIGCONT)
        return f"broker {node}"

    def close(self) -> None:
        for node in self.kafka.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.send_signal(signal.SIGCONT)
        self.kafka.stop()


class Instance:
    """One ``streamrt run tests.chaos.chaos_app:app`` process: static member
    ``chaos-<n>`` with its own state directory (its own host), log appended to ``<work>``."""

    def __init__(
        self, index: int, work: Path, bootstrap: str, threads: int, settings: dict[str, str]
    ) -> None:
        self.index = index
        self.instance_id = f"chaos-{index}"
        self.state = work / f"state-{index}"
        self.log_path = work / f"{self.instance_id}.log"
        self.bootstrap = bootstrap
        self.threads = threads
        self.settings = settings
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        args = [sys.executable, "-m", "streamrt.cli", "run", "tests.chaos.chaos_app:app"]
        args += ["--instance-id", self.instance_id, "--threads", str(self.threads)]
        args += ["--bootstrap-server", self.bootstrap, "--state-dir", str(self.state)]
        for key, value in self.settings.items():
            args += ["--config", f"{key}={value}"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with self.log_path.open("ab") as log:
            # where a restart's time goes (import, join, restore) is read against this line
            mark = {"ts": time.time(), "msg": "chaos: process started", "start": self.starts + 1}
            log.write(json.dumps(mark).encode() + b"\n")
            log.flush()
            self.proc = subprocess.Popen(
                args, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=str(REPO)
            )
        self.starts += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        """Send ``sig`` and wait for the exit; SIGKILL after ``timeout``. The exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc is not None else None
        self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
