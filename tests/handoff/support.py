"""Real ``streamrt run`` processes of one instance, an embedded broker and the events tail."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from streamrt.broker.embedded import BrokerThread
from streamrt.deploy.event_tail import EventTail
from streamrt.deploy.kafka_io import coordinator_rebalances
from streamrt.runtime.instance.handoff import HandoffError, ping, socket_path
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until

APP_ID = "handoff-counting"
TARGET = "tests.handoff.handoff_app:app"
REPO = Path(__file__).resolve().parents[2]
BROKER = {
    "group.min.session.timeout.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "2",
}
SETTINGS = {
    # long enough that no session expires while a loaded machine runs a slow old instance
    # (a CI run at load 20-37 saw a rebalance in the two-successor race at 10 s); a static
    # member's takeover never waits for it
    "session.timeout.ms": "30000",
    "heartbeat.interval.ms": "500",
    "commit.interval.ms": "200",
}


@dataclass
class Proc:
    """One ``streamrt run`` process; its log is a JSON-lines file."""

    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait(self, timeout: float = 60) -> int:
        return self.popen.wait(timeout)

    def alive(self) -> bool:
        return self.popen.poll() is None


@dataclass
class Instance:
    """Processes of instance ``web-1`` sharing one state dir."""

    bootstrap: str
    work: Path
    threads: int = 2
    extra: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)

    @property
    def mode_file(self) -> Path:
        return self.work / "mode"

    @property
    def hold_file(self) -> Path:
        """While it exists, the app holds every record (handoff_app.py)."""
        return self.work / "hold"

    def argv(self, handoff: bool) -> list[str]:
        cmd = [sys.executable, "-m", "streamrt.cli", "--log-format", "json", "run", TARGET]
        cmd += ["--instance-id", "web-1", "--threads", str(self.threads)]
        cmd += ["--bootstrap-server", self.bootstrap, "--state-dir", str(self.work / "state")]
        for k, v in SETTINGS.items():
            cmd += ["--config", f"{k}={v}"]
        cmd += self.extra
        if handoff:
            cmd.append("--handoff")
        return cmd

    def spawn(self, handoff: bool = False) -> Proc:
        log = self.work / f"proc-{len(self.procs)}.log"
        env = {**os.environ, "HANDOFF_APP_MODE_FILE": str(self.mode_file), **self.env}
        env["HANDOFF_APP_HOLD_FILE"] = str(self.hold_file)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        with log.open("wb") as out:
            popen = subprocess.Popen(
                self.argv(handoff), stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env
            )
        proc = Proc(popen, log)
        self.procs.append(proc)
        return proc

    def kill_all(self) -> None:
        """Ours, and a successor a SIGHUP started (found through the hand-off socket)."""
        try:
            pid = ping(socket_path(self.work / "state" / APP_ID), timeout=2)["pid"]
        except (HandoffError, OSError, ValueError):
            pid = None
        if isinstance(pid, int) and pid not in {p.pid for p in self.procs}:
            os.kill(pid, signal.SIGKILL)
        for p in self.procs:
            if p.alive():
                p.popen.send_signal(signal.SIGKILL)
                p.popen.wait(10)


@contextmanager
def instance(tmp_path: Path, **kwargs: object) -> Iterator[tuple[Instance, EventTail, str]]:
    """A broker with metrics, the topics, an events tail and a (not yet started) instance."""
    broker = BrokerThread(tmp_path / "broker", BROKER, metrics_port=0).start()
    inst: Instance | None = None
    try:
        create_topic(broker.bootstrap, "events", 4)
        create_topic(broker.bootstrap, "event-counts-out", 4)
        assert broker.broker is not None
        metrics = f"http://127.0.0.1:{broker.broker.metrics_bound_port}/metrics"
        inst = Instance(broker.bootstrap, tmp_path, **kwargs)  # type: ignore[arg-type]
        with EventTail(broker.bootstrap, APP_ID) as tail:
            yield inst, tail, metrics
    finally:
        if inst is not None:
            inst.kill_all()
        broker.stop()


def send(bootstrap: str, n: int, start: int = 0, keys: int = 16) -> None:
    produce(bootstrap, "events", [(f"k{i % keys}".encode(), b"e") for i in range(start, start + n)])


def expected(n: int, keys: int = 16) -> dict[str, int]:
    return dict(Counter(f"k{i % keys}" for i in range(n)))


def counts(bootstrap: str) -> dict[str, int]:
    return {
        k.decode(): struct.unpack(">q", v)[0]
        for k, v in latest_by_key(read_all(bootstrap, "event-counts-out")).items()
    }


def wait_counts(bootstrap: str, n: int, timeout: float = 90) -> None:
    want = expected(n)
    wait_until(lambda: counts(bootstrap) == want, timeout, f"counts of {n} events")


def wait_running(tail: EventTail, proc: Proc, threads: int = 2, timeout: float = 90) -> float:
    return tail.wait_for(lambda: tail.is_running(proc.pid, threads), timeout, f"pid {proc.pid}")


def wait_log(proc: Proc, text: str, timeout: float = 60) -> None:
    wait_until(lambda: text in proc.text(), timeout, f"{text!r} in {proc.log.name}", 0.02)


def broker_rebalances(metrics: str) -> int:
    return coordinator_rebalances(metrics, APP_ID) or 0


def since(tail: EventTail, t0: float, type_: str) -> list[dict[str, object]]:
    return tail.events(lambda e: e["ts"] >= t0 and e["type"] == type_)


def now() -> float:
    return time.time()
