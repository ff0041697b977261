"""Throughput against the peers: streamrt vs Quix Streams vs faust-streaming vs a bare loop.

One run, one ``streamrt broker`` subprocess, the same input per workload for every contender
(``bench/_peers_workloads.py``), each contender in its own process(es), run one after another.
The rate is measured outside the contender: this process samples the end offsets of the
contender's sink topic every 100 ms and takes the time between 10 % and 90 % of the expected
output (every workload emits one output per kept input update), as input records/s. After each
run the whole sink topic is read back and verified (stateless: every kept input mapped exactly;
word count: the last count per word equals its count in the input; sessions: the last profile
per user equals the fold recomputed from the input); a contender whose output is wrong gets no
rate.

Contenders (``--contenders``, comma-separated):

- ``streamrt-1t``, ``streamrt-2t``, ``streamrt-4t``: one process, ``num.stream.threads`` 1/2/4;
  ``streamrt-2x1``: two processes x 1 thread; ``streamrt-2p``, ``streamrt-4p``: one instance
  with 2/4 stream threads in ``stream.thread.mode=process`` (each thread a child process);
  all on the stream threads' one data path since issue 37 (librdkafka's consumer and
  producer, the group kept by streamrt's own member; aiokafka's path, which the published
  ``streamrt-1t`` figures before issue 24 measured, is gone with its
  ``stream.thread.*`` keys). ``streamrt-1t-rdk`` (any ``streamrt-…-rdk``) and the ``+rdk``
  lever are kept as names of that same path, so older commands still run.
  Levers (the harness's monkeypatches, never the runtime's code): ``+b1m``/``+b16k``
  producer ``max_batch_size``, ``+l20``/``+l5`` ``linger_ms``,
  ``+orjson`` for the JSON serde, e.g. ``streamrt-1t+b1m+l20+orjson``;
- ``quix``: Quix Streams 3.28.1 (its own venv, ``make bench-venv``: it needs confluent-kafka
  < 2.13), ``sdf.filter/apply(stateful=True)/group_by`` + ``to_topic``;
- ``faust``: faust-streaming 0.15.3, agents + RocksDB tables;
- ``kafka-streams-1t``, ``kafka-streams-2t``: Kafka Streams 4.3.1 (Java, ``bench/kafka-streams/``,
  built with Maven on first use), ``num.stream.threads`` 1/2, RocksDB stores with changelogs,
  record cache off (one output per update, like the others);
- ``bare-confluent`` (the floor: confluent-kafka consumer → ``json`` → confluent-kafka
  producer; stateless, and word count through a repartition and a changelog topic with the
  counts in a dict, ``bench/_peers_bare.py``) and ``bare-aiokafka`` (the stateless loop on
  aiokafka).

    .venv/bin/python bench/peers_throughput.py --records 200000 --wordcount-records 100000 \\
        --session-records 50000 --out docs/bench/peers_throughput
    .venv/bin/python bench/peers_throughput.py --quick        # make bench
    .venv/bin/python bench/peers_throughput.py --kafka apache \\
        --contenders streamrt-1t,kafka-streams-1t

``--kafka apache`` runs every contender on Apache Kafka 4.3.1 (``streamrt dev kafka``, 1 broker)
instead of the embedded broker.

``--profile DIR`` records a py-spy profile (raw collapsed stacks, idle included) of each
``streamrt-*`` contender's process into DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker
from _peers_proc import cpu_seconds, idle_seconds, runqueue_seconds, window
from _peers_report import Result, add_ratios, chart, cores, table
from _peers_workloads import WORKLOADS, expected_outputs, generate, verify

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

PARTITIONS = 4
MIN_WINDOW_SAMPLES = 10  # a 10 %-90 % window shorter than 1 s is not a measurement
# each workload's size flag: what a too-short window's error tells the operator to raise
SIZE_FLAGS = {
    "stateless": "--records",
    "wordcount": "--wordcount-records",
    "sessions": "--session-records",
}
DEFAULT_CONTENDERS = (
    "bare-confluent,bare-aiokafka,streamrt-1t,streamrt-2t,streamrt-4t,streamrt-2x1,quix,faust"
)
LEVERS: dict[str, tuple[str, Any]] = {
    "b1m": ("max_batch_size", 1 << 20),
    "b256k": ("max_batch_size", 256 << 10),
    "b16k": ("max_batch_size", 16 << 10),
    "l0": ("linger_ms", 0),
    "l5": ("linger_ms", 5),
    "l20": ("linger_ms", 20),
}


# -- broker helpers ------------------------------------------------------------------------------


def create_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name, fut in admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names]).items():
        try:
            fut.result(15)
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise RuntimeError(f"creating {name}: {exc}") from exc


def produce_input(bootstrap: str, topic: str, workload: str, records: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    for key, value in generate(workload, records):
        while True:
            try:
                p.produce(topic, value, key)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    if p.flush(60):
        raise RuntimeError("input not fully produced")


class EndOffsets:
    """Samples the sum of a topic's end offsets (a ListOffsets per partition)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "peers-probe"})
        self.tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]

    def total(self) -> int:
        return sum(
            self.consumer.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in self.tps
        )

    def total_once_led(self, wait_s: float = 30.0) -> int:
        """``total()`` once every partition has a leader: Apache Kafka answers
        NOT_LEADER_FOR_PARTITION for a moment after the topic is created."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + wait_s
        while True:
            try:
                return self.total()
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def close(self) -> None:
        self.consumer.close()


def read_topic(bootstrap: str, topic: str) -> Iterator[tuple[bytes | None, bytes | None]]:
    """Every record of ``topic``, partition by partition in offset order.

    ``consume`` waits its whole timeout unless it fills the batch, so the timeout is short: the
    loop ends on the end offset, not on a quiet poll (2 s per partition made every read-back
    of a small output take 8 s)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "peers-verify",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 8 << 20,
        }
    )
    try:
        for p in range(PARTITIONS):
            end = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            if end == 0:
                continue
            c.assign([TopicPartition(topic, p, 0)])
            pos = 0
            while pos < end:
                for msg in c.consume(10000, 0.2):
                    if msg.error():
                        continue
                    pos = msg.offset() + 1
                    yield msg.key(), msg.value()
            c.unassign()
    finally:
        c.close()


class _Embedded:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def start_any_broker(kind: str, tmp: Path, initial_delay_ms: int = 0) -> tuple[Any, str]:
    """(a handle with ``stop()``, bootstrap) for the embedded broker or Apache Kafka."""
    if kind == "apache":
        from streamrt.dev.apache_kafka import ApacheKafka

        kafka = ApacheKafka(1, work_dir=tmp / "apache-kafka").start()
        return kafka, kafka.bootstrap
    port = free_port()
    delay = f"group.initial.rebalance.delay.ms={initial_delay_ms}"
    proc = start_broker(str(tmp / "broker"), port, delay)
    return _Embedded(proc), f"127.0.0.1:{port}"


# -- contenders ----------------------------------------------------------------------------------


@dataclass
class Launch:
    argvs: list[list[str]]
    env: dict[str, str]


def launch_spec(name: str, workload: str, args: argparse.Namespace) -> Launch | str:
    """The processes for contender ``name``, or why it does not run on this workload."""
    env: dict[str, str] = {}
    py = sys.executable
    base, *mods = name.split("+")
    if base.startswith("bare-"):
        if workload not in ("stateless", "wordcount" if base == "bare-confluent" else ""):
            return "stateless only" if base != "bare-confluent" else "not on sessions"
        env["PEERS_CLIENT"] = base.removeprefix("bare-")
        return Launch([[py, str(HERE / "_peers_bare.py")]], env)
    if base == "quix":
        if not Path(args.quix_python).exists():
            return f"{args.quix_python} missing (make bench-venv)"
        # absolute, not resolved: contenders start in the run's temporary directory (so a
        # relative path, as `make bench-medians` passes, would miss), and resolving the venv's
        # python symlink would leave the venv
        quix_python = str(Path(args.quix_python).absolute())
        return Launch([[quix_python, str(HERE / "_peers_quix.py")]], env)
    if base == "faust":
        argv = [py, str(HERE / "_peers_faust.py"), "worker", "--without-web", "-l", "warn"]
        return Launch([argv], env)
    ks = re.fullmatch(r"kafka-streams-(\d+)t", base)
    if ks:
        from _kafka_streams import KafkaStreamsUnavailable, command

        try:
            argv = command("peers")
        except KafkaStreamsUnavailable as exc:
            return str(exc)
        env["PEERS_THREADS"] = ks.group(1)
        if args.commit_interval_ms:
            env["PEERS_CONFIG"] = json.dumps({"commit.interval.ms": args.commit_interval_ms})
        return Launch([argv], env)
    return streamrt_launch(name, base, mods, env, args)


def streamrt_launch(
    name: str, base: str, mods: list[str], env: dict[str, str], args: argparse.Namespace
) -> Launch:
    """A ``streamrt-*`` contender's processes: instances x threads, its levers."""
    py = sys.executable
    m = re.fullmatch(r"streamrt-(?:(\d+)x)?(\d+)([tp]?)(-rdk)?", base)
    if not m:
        raise SystemExit(f"unknown contender {name!r}")
    instances, threads = int(m.group(1) or 1), int(m.group(2))
    config: dict[str, Any] = {}  # the one data path (``-rdk``: its older name)
    if m.group(3) == "p":
        config["stream.thread.mode"] = "process"
    producer: dict[str, Any] = {}
    for mod in mods:
        if mod == "orjson":
            env["PEERS_JSON"] = "orjson"
        elif mod == "rdk":
            pass  # librdkafka's producer: the only one since issue 37
        elif mod in LEVERS:
            producer[LEVERS[mod][0]] = LEVERS[mod][1]
        else:
            raise SystemExit(f"unknown lever +{mod} (known: orjson, rdk, {', '.join(LEVERS)})")
    if producer:
        env["PEERS_PRODUCER"] = json.dumps(producer)
    env["PEERS_THREADS"] = str(threads)
    if args.commit_interval_ms:
        config["commit.interval.ms"] = args.commit_interval_ms
    if config:
        env["PEERS_CONFIG"] = json.dumps(config)
    return Launch([[py, str(HERE / "_peers_streamrt.py")] for _ in range(instances)], env)


def slug(name: str) -> str:
    """Topic/app-id safe and one-to-one on contender names: ``+`` is spelled out, else
    ``streamrt-1t+rdk`` and ``streamrt-1t-rdk`` shared a sink and an application id."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name.replace("+", "-with-")).strip("-")


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 30
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run_contender(
    name: str, workload: str, records: int, bootstrap: str, tmp: Path, args: argparse.Namespace
) -> Result:
    result = Result(workload, name, records)
    spec = launch_spec(name, workload, args)
    if isinstance(spec, str):
        result.error = f"skipped: {spec}"
        return result
    tag = f"{workload}-{slug(name)}"
    sink = f"peers-{tag}-out"
    create_topics(bootstrap, [sink])
    expected = expected_outputs(workload, records)
    env = dict(os.environ)
    env.update(spec.env)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
            "PEERS_WORKLOAD": workload,
            "PEERS_BOOTSTRAP": bootstrap,
            "PEERS_IN": f"peers-{workload}-in",
            "PEERS_OUT": sink,
            "PEERS_APP_ID": f"peers-{tag}",
            "PEERS_PARTITIONS": str(PARTITIONS),
        }
    )
    probe = EndOffsets(bootstrap, sink)
    if probe.total_once_led():
        probe.close()
        result.error = f"sink {sink} is not empty before the run: a name collision"
        return result
    procs: list[subprocess.Popen[bytes]] = []
    spies: list[subprocess.Popen[bytes]] = []
    logs = ROOT / "bench" / "results" / "peers-logs"
    logs.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        for i, argv in enumerate(spec.argvs):
            state_dir = tmp / "state" / tag / str(i)
            state_dir.parent.mkdir(parents=True, exist_ok=True)
            env_i = dict(env, PEERS_STATE_DIR=str(state_dir))
            log = open(logs / f"{tag}-{i}.log", "wb")  # noqa: SIM115 - closed with the process
            procs.append(
                subprocess.Popen(argv, env=env_i, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
            )
            if args.profile and name.startswith("streamrt") and i == 0:
                spies.append(start_spy(procs[-1].pid, Path(args.profile) / f"{tag}.txt"))
        pids = [p.pid for p in procs]
        broker_pids = [args.broker_pid] if args.broker_pid else []
        samples: list[tuple[float, int, float]] = [(time.monotonic(), 0, cpu_seconds(pids))]
        broker_cpu: list[float] = [cpu_seconds(broker_pids, tree=False)]
        waits: list[float] = [runqueue_seconds(pids)]
        idles: list[float] = [idle_seconds()]
        deadline = t0 + args.timeout
        while samples[-1][1] < expected:
            time.sleep(0.1)
            samples.append((time.monotonic(), probe.total(), cpu_seconds(pids)))
            broker_cpu.append(cpu_seconds(broker_pids, tree=False))
            waits.append(runqueue_seconds(pids))
            idles.append(idle_seconds())
            if any(p.poll() is not None for p in procs):
                result.error = f"a process exited early (log: {logs}/{tag}-*.log)"
                break
            if time.monotonic() > deadline:
                t, n, _c = samples[-1]
                result.error = (
                    f"did not finish in {args.timeout:.0f} s: {n}/{expected} outputs, "
                    f"~{n / expected * records / (t - t0):,.0f} input records/s overall"
                )
                break
        result.seconds_to_done = samples[-1][0] - t0
        result.trace = [
            (round(t - t0, 2), n)
            for i, (t, n, _c) in enumerate(samples)
            if i == 0 or n != samples[i - 1][1]
        ]
        span = window(samples, 0.1 * expected, 0.9 * expected)
        if span is not None:
            (t10, _c10), (t90, _c90), _n = span
            i10 = next(i for i, smp in enumerate(samples) if smp[0] == t10)
            i90 = next(i for i, smp in enumerate(samples) if smp[0] == t90)
            if t90 > t10:
                wall = t90 - t10
                result.runqueue_cores = (waits[i90] - waits[i10]) / wall
                result.idle_cores = (idles[i90] - idles[i10]) / wall
                if broker_pids:
                    result.broker_cores = (broker_cpu[i90] - broker_cpu[i10]) / wall
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)
        stop_all(procs)
        for spy in spies:
            try:
                spy.wait(30)
            except subprocess.TimeoutExpired:
                spy.kill()
        probe.close()
    output = list(read_topic(bootstrap, sink))
    result.outputs = len(output)
    problem = verify(workload, records, output)
    if problem:
        result.error = "; ".join(filter(None, [result.error, f"WRONG OUTPUT: {problem}"]))
        return result
    result.verified = True
    if span is not None:
        result.window_samples = span[2]
    if span is not None and span[2] < MIN_WINDOW_SAMPLES:
        result.error = too_short(workload, records, span[2])
    elif not result.error and span is not None:
        (t10, c10), (t90, c90), _n = span
        result.rate = 0.8 * records / (t90 - t10)
        if c90 > c10:
            result.cpu_rate = 0.8 * records / (c90 - c10)
            result.contender_cores = (c90 - c10) / (t90 - t10)
    return result


def too_short(workload: str, records: int, samples: int) -> str:
    """Why a run got no rate: its 10-90 % window had under :data:`MIN_WINDOW_SAMPLES` samples
    (~1 s). Names the size flag to raise and a size that would give ~3x the minimum at the
    rate just seen (a faster build ends a fixed size sooner: bench-check's sizes went stale so)."""
    wanted = records * 3 * MIN_WINDOW_SAMPLES // max(samples, 1)
    step = 10 ** max(len(str(wanted)) - 2, 0)  # two significant digits, rounded up
    wanted = -(-wanted // step) * step
    return (
        f"10-90% window of {samples} samples (< {MIN_WINDOW_SAMPLES}, ~1 s): too short to "
        f"time, use more records: raise {SIZE_FLAGS[workload]} (now {records:,}) to "
        f"~{wanted:,} or more"
    )


def start_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    spy = next(
        (
            str(c)
            for c in (Path(sys.executable).with_name("py-spy"), ROOT / ".venv-bench/bin/py-spy")
            if c.exists()
        ),
        shutil.which("py-spy") or "py-spy",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = [spy, "record", "--pid", str(pid), "--format", "raw", "--idle", "--threads"]
    argv += ["--subprocesses"]  # stream.thread.mode=process: the children too
    argv += ["--rate", "100", "--nonblocking", "-o", str(out)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="stateless input records")
    ap.add_argument("--wordcount-records", type=int, default=100_000, help="lines of 4 words")
    ap.add_argument("--session-records", type=int, default=50_000, help="clicks (users = 1/5)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--contenders", default=DEFAULT_CONTENDERS)
    ap.add_argument("--quick", action="store_true", help="small sizes, 4 contenders (make bench)")
    ap.add_argument("--quix-python", default=str(ROOT / ".venv-bench" / "bin" / "python"))
    ap.add_argument("--commit-interval-ms", type=int, help="streamrt commit.interval.ms")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per contender run")
    ap.add_argument(
        "--initial-rebalance-delay-ms",
        type=int,
        default=0,
        help="the embedded broker's group.initial.rebalance.delay.ms (default 0; Kafka's is "
        "3000, which lets members that start a moment apart join in one generation)",
    )
    ap.add_argument("--profile", help="directory for py-spy profiles of streamrt contenders")
    ap.add_argument("--out", help="directory for results.json and chart.png")
    ap.add_argument(
        "--kafka",
        choices=("embedded", "apache"),
        default="embedded",
        help="the broker every contender runs on: streamrt's embedded broker (default) or "
        "Apache Kafka 4.3.1 from Maven Central (1 broker)",
    )
    args = ap.parse_args()
    if args.quick:
        args.records, args.wordcount_records, args.session_records = 20_000, 10_000, 5_000
        if args.contenders == DEFAULT_CONTENDERS:
            args.contenders = "bare-confluent,streamrt-1t,quix,faust"
    sizes = {
        "stateless": args.records,
        "wordcount": args.wordcount_records,
        "sessions": args.session_records,
    }
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    results: list[Result] = []
    started = time.strftime("%Y-%m-%d %H:%M")
    with tempfile.TemporaryDirectory(prefix="peers-") as tmpdir:
        tmp = Path(tmpdir)
        broker, bootstrap = start_any_broker(args.kafka, tmp, args.initial_rebalance_delay_ms)
        args.broker_pid = broker.proc.pid if isinstance(broker, _Embedded) else None
        try:
            for wl in [w.strip() for w in args.workloads.split(",") if w.strip()]:
                if wl not in WORKLOADS:
                    raise SystemExit(f"unknown workload {wl!r} (known: {', '.join(WORKLOADS)})")
                create_topics(bootstrap, [f"peers-{wl}-in"])
                produce_input(bootstrap, f"peers-{wl}-in", wl, sizes[wl])
                for name in contenders:
                    r = run_contender(name, wl, sizes[wl], bootstrap, tmp, args)
                    results.append(r)
                    shown = (
                        f"{r.rate:,.0f} records/s, {r.cpu_rate or 0:,.0f} per CPU-s, "
                        f"cores: contender {cores(r.contender_cores)} "
                        f"(+{cores(r.runqueue_cores)} waiting) "
                        f"broker {cores(r.broker_cores)} idle {cores(r.idle_cores)}"
                        if r.rate
                        else r.error
                    )
                    print(f"{wl:>9} {name:<28} {shown}", flush=True)
        finally:
            broker.stop()
    add_ratios(results)
    print()
    print(table(results))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        meta = {
            "date": started,
            "cores": os.cpu_count(),
            "partitions": PARTITIONS,
            "broker": args.kafka,
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        }
        doc = {"meta": meta, "results": [asdict(r) for r in results]}
        (out / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
        if any(r.rate for r in results):
            chart(results, out / "chart.png")
        print(f"\nwrote {out}/results.json and chart.png")


if __name__ == "__main__":
    main()
