"""Broker CPU per MB produced and per MB fetched, the embedded broker next to Apache Kafka.

    PYTHONPATH=$PWD .venv/bin/python bench/broker_cpu.py --mb 200 --profile-dir /tmp/broker-prof

What a runtime costs the broker: the broker runs as its own process (``streamrt broker``,
uvloop; or Apache Kafka 4.3.1 from ``streamrt.dev.apache_kafka``, one KRaft node, the same
loopback, the same load) and its CPU time (user + system, every thread, from
``/proc/<pid>/stat``) is read before and after each phase:

- produce: ``--mb`` MB of ``--record-size`` B records to a 12-partition topic, acks=all,
  by librdkafka (confluent-kafka, its default 1 MB batches, linger 5 ms) and by aiokafka
  with the runtime's producer batch size (256 KiB, linger 5 ms);
- fetch: the same records read back from the beginning by the same client.

A warm-up produce/fetch round runs first (the JVM's JIT; the page cache). Idle CPU is
measured over 3 s and reported, not subtracted. Ratios are streamrt ÷ Apache Kafka CPU per MB:
below 1 the Python broker spends less CPU than the JVM for the same bytes. The client's own
CPU per MB (this process) is printed next to it: which side of the wire is the limit.

``--rounds N`` runs every broker N times in turn and keeps the median phase; ``--brokers
streamrt,base --base-tree DIR`` compares this checkout's broker with another source tree's
(``git archive <commit> streamrt | tar -x -C DIR``): before/after numbers for a broker change.

``--profile-dir`` samples the embedded broker with py-spy during each measured phase and writes
the raw profiles and a summary (top functions by self and inclusive time) there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker

REPO = Path(__file__).resolve().parents[1]
PARTITIONS = 12
AIOKAFKA_BATCH = 262_144  # the runtime's producer.batch.size default (streamrt.client_config)
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of every thread of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def request_counts(metrics_url: str | None) -> Counter[str]:
    """The embedded broker's requests handled so far, per API (empty for Apache Kafka)."""
    if metrics_url is None:
        return Counter()
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    pattern = r'^streamrt_broker_requests_total\{api="(\w+)"\} (\S+)$'
    return Counter({m[1]: int(float(m[2])) for m in re.finditer(pattern, text, re.MULTILINE)})


@dataclass(slots=True)
class Phase:
    broker: str
    client: str
    phase: str
    mb: float
    wall_s: float
    broker_cpu_s: float
    requests: int = 0  # Produce or Fetch requests the embedded broker handled (0: unknown)
    client_cpu_s: float = 0.0  # the client's own CPU (this process, every thread)

    @property
    def us_per_request(self) -> float:
        return 1e6 * self.broker_cpu_s / self.requests if self.requests else 0.0

    @property
    def cpu_ms_per_mb(self) -> float:
        return 1000 * self.broker_cpu_s / self.mb

    @property
    def mb_per_s(self) -> float:
        return self.mb / self.wall_s


# -- clients --------------------------------------------------------------------------------


def confluent_produce(bootstrap: str, topic: str, n: int, size: int) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "queue.buffering.max.messages": 1_000_000}
    )
    value = os.urandom(size)
    for i in range(n):
        key = b"k%07d" % i
        while True:
            try:
                p.produce(topic, value, key)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(300):
        raise RuntimeError("confluent producer: records left unsent")


def confluent_fetch(bootstrap: str, topic: str, n: int, size: int) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    deadline = time.monotonic() + 300
    while got < n and time.monotonic() < deadline:
        got += sum(1 for m in c.consume(10_000, timeout=1.0) if m.error() is None)
    c.close()
    if got < n:
        raise RuntimeError(f"confluent consumer: {got} of {n} records")


def aiokafka_produce(bootstrap: str, topic: str, n: int, size: int) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=AIOKAFKA_BATCH
        )
        await p.start()
        value = os.urandom(size)
        try:
            for i in range(n):
                await p.send(topic, value, key=b"k%07d" % i)
            await p.flush()
        finally:
            await p.stop()

    asyncio.run(run())


def aiokafka_fetch(bootstrap: str, topic: str, n: int, size: int) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> None:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await c.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            got = 0
            deadline = time.monotonic() + 300
            while got < n and time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=1000, max_records=50_000)
                got += sum(len(v) for v in batch.values())
            if got < n:
                raise RuntimeError(f"aiokafka consumer: {got} of {n} records")
        finally:
            await c.stop()

    asyncio.run(run())


Client = Callable[[str, str, int, int], None]
CLIENTS: dict[str, tuple[Client, Client]] = {
    "confluent-kafka": (confluent_produce, confluent_fetch),
    "aiokafka": (aiokafka_produce, aiokafka_fetch),
}


# -- brokers --------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


class Profiler:
    """py-spy sampling one process while a phase runs (raw folded stacks)."""

    def __init__(self, pid: int, out: Path | None) -> None:
        self.pid, self.out = pid, out
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Profiler:
        if self.out is not None:
            spy = Path(sys.executable).with_name("py-spy")
            cmd = [str(spy), "record", "--pid", str(self.pid), "--format", "raw", "--rate", "250"]
            cmd += ["--nonblocking", "--output", str(self.out)]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1.0)  # attached before the phase begins
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(60)


def measure(
    broker: str,
    pid: int,
    bootstrap: str,
    mb: float,
    size: int,
    profile_dir: Path | None,
    metrics_url: str | None = None,
) -> list[Phase]:
    n = int(mb * 1e6 / size)
    phases = []
    for name, (produce, fetch) in CLIENTS.items():
        warm = f"warm-{name}"
        create_topic(bootstrap, warm)
        produce(bootstrap, warm, max(n // 10, 1000), size)
        fetch(bootstrap, warm, max(n // 10, 1000), size)
        topic = f"cpu-{name}"
        create_topic(bootstrap, topic)
        for phase, run in (("produce", produce), ("fetch", fetch)):
            out = profile_dir / f"{name}-{phase}.txt" if profile_dir else None
            api = phase  # the metric's label: "produce", "fetch"
            requests0 = request_counts(metrics_url)[api]  # outside the profile and the CPU
            with Profiler(pid, out):
                cpu0, t0, own0 = cpu_seconds(pid), time.perf_counter(), time.process_time()
                run(bootstrap, topic, n, size)
                wall, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
                own = time.process_time() - own0
            requests = request_counts(metrics_url)[api] - requests0
            phases.append(Phase(broker, name, phase, n * size / 1e6, wall, cpu, requests, own))
            print(
                f"  {broker} {name} {phase}: {phases[-1].cpu_ms_per_mb:.2f} ms CPU/MB", flush=True
            )
    return phases


def idle_cpu(pid: int, seconds: float = 3.0) -> float:
    """CPU seconds per second of an idle broker (timers, housekeeping)."""
    cpu0 = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - cpu0) / seconds


def run_streamrt(
    args: argparse.Namespace, tmp: str, tree: Path | None = None
) -> tuple[list[Phase], float]:
    """The embedded broker of this checkout, or of ``tree`` (another checkout's source, e.g.
    the previous commit's ``git archive``) put first on its PYTHONPATH."""
    port, metrics_port = free_port(), free_port()
    data_dir = tempfile.mkdtemp(dir=tmp)
    source = str(tree or REPO)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    # cwd: the data dir, so ``python -m`` does not put this checkout first on sys.path
    proc = start_broker(data_dir, port, metrics_port=metrics_port, env=env, cwd=data_dir)
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    name = "streamrt" if tree is None else "streamrt (base)"
    try:
        idle = idle_cpu(proc.pid)
        profile_dir = args.profile_dir
        if profile_dir is not None:
            profile_dir.mkdir(parents=True, exist_ok=True)
        bootstrap = f"127.0.0.1:{port}"
        if tree is not None:
            profile_dir = None
        phases = measure(
            name, proc.pid, bootstrap, args.mb, args.record_size, profile_dir, metrics_url
        )
        return phases, idle
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data_dir, ignore_errors=True)


def run_apache(args: argparse.Namespace, tmp: str) -> tuple[list[Phase], float]:
    from streamrt.dev.apache_kafka import KAFKA_VERSION, ApacheKafka

    with ApacheKafka(1, work_dir=Path(tmp) / "apache", heap="1g") as kafka:
        process = kafka.nodes[0].process
        assert process is not None
        idle = idle_cpu(process.pid)
        name = f"Apache Kafka {KAFKA_VERSION}"
        return measure(name, process.pid, kafka.bootstrap, args.mb, args.record_size, None), idle


# -- report ---------------------------------------------------------------------------------


def summarise_profile(path: Path, top: int = 15) -> list[str]:
    """Top functions of a raw py-spy profile by self and by inclusive samples."""
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = [f.split(" (")[0] + " (" + f.rsplit("/", 1)[-1] for f in stack.split(";")]
        n = int(count)
        total += n
        self_time[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    lines = [f"{path.name}: {total} samples", "self:"]
    lines += [f"  {100 * c / total:5.1f}%  {f}" for f, c in self_time.most_common(top)]
    lines.append("inclusive:")
    lines += [f"  {100 * c / total:5.1f}%  {f}" for f, c in inclusive.most_common(top + 10)]
    return lines


def medians(phases: list[Phase]) -> list[Phase]:
    """One phase per (broker, client, phase): the median of its rounds by broker CPU."""
    groups: dict[tuple[str, str, str], list[Phase]] = {}
    for p in phases:
        groups.setdefault((p.broker, p.client, p.phase), []).append(p)
    return [sorted(g, key=lambda p: p.broker_cpu_s)[len(g) // 2] for g in groups.values()]


def _ratio(p: Phase, base: Phase | None) -> str:
    return f"{p.cpu_ms_per_mb / base.cpu_ms_per_mb:.2f}" if base and base.broker_cpu_s else ""


def table(phases: list[Phase], idle: dict[str, float]) -> list[str]:
    apache = {(p.client, p.phase): p for p in phases if p.broker.startswith("Apache")}
    before = {(p.client, p.phase): p for p in phases if p.broker == "streamrt (base)"}
    lines = [
        "| broker | client | phase | MB | wall s | MB/s | broker CPU s | CPU ms / MB | "
        "ratio to Apache Kafka | ratio to base | requests | CPU µs / request | "
        "client CPU ms / MB |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in phases:
        key = (p.client, p.phase)
        ratio = f"{_ratio(p, apache.get(key))} | {_ratio(p, before.get(key))}"
        lines.append(
            f"| {p.broker} | {p.client} | {p.phase} | {p.mb:.0f} | {p.wall_s:.2f} | "
            f"{p.mb_per_s:.1f} | {p.broker_cpu_s:.2f} | {p.cpu_ms_per_mb:.2f} | {ratio} | "
            f"{p.requests or ''} | {p.us_per_request:.0f} | "
            f"{1000 * p.client_cpu_s / p.mb:.1f} |".replace("| 0 |", "|  |")
        )
    lines.append("")
    lines += [f"idle CPU, {b}: {v * 1000:.1f} ms/s" for b, v in idle.items()]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0, help="MB per client per phase")
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument(
        "--brokers",
        default="streamrt,apache",
        help="comma list: streamrt (this checkout), base (--base-tree's), apache",
    )
    ap.add_argument("--base-tree", type=Path, help="a source tree holding another streamrt/")
    ap.add_argument("--rounds", type=int, default=1, help="every broker this many times, in turn")
    ap.add_argument("--profile-dir", type=Path, help="py-spy profiles of the embedded broker")
    ap.add_argument("--json", type=Path, help="write the phases here")
    args = ap.parse_args()
    profile_dir = args.profile_dir
    phases: list[Phase] = []
    idle: dict[str, float] = {}
    runners: dict[str, Callable[[argparse.Namespace, str], tuple[list[Phase], float]]] = {
        "streamrt": run_streamrt,
        "base": lambda a, t: run_streamrt(a, t, a.base_tree),
        "apache": run_apache,
    }
    with tempfile.TemporaryDirectory(prefix="broker-cpu-") as tmp:
        for n in range(args.rounds):
            for broker in args.brokers.split(","):
                got, rate = runners[broker](args, tmp)
                phases += got
                idle[got[0].broker] = rate
            if n == 0:
                args.profile_dir = None  # profile the first round only
    phases = medians(phases)
    lines = table(phases, idle)
    if profile_dir is not None:
        for path in sorted(profile_dir.glob("*.txt")):
            summary = summarise_profile(path)
            (profile_dir / f"{path.stem}.top").write_text("\n".join(summary) + "\n")
            lines += ["", *summary[:12]]
    print("\n".join(lines))
    if args.json is not None:
        args.json.write_text(json.dumps({"phases": [asdict(p) for p in phases]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
