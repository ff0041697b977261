"""End-to-end latency against the peers: input record timestamp to the output's arrival.

Issue 24 item 4. The contenders and workloads are those of ``bench/peers_throughput.py``
(same launch specs, same per-record work, same whole-output verification), on one
``streamrt broker`` subprocess (``--kafka apache``: Apache Kafka 4.3.1, 1 broker).

Per (workload, contender):

1. Saturation: a max-rate run of ``peers_throughput``'s own (``--sat-records`` pre-produced
   inputs, 10 %-90 % of the sink's end offsets), or ``--rate`` for every contender.
2. For each load (``--loads``, default 50 % and 90 % of saturation) and each of ``--runs``
   runs, on fresh topics: the contender starts; a warm-up sends one input every 100 ms until
   the first output arrives (so group join and startup are not latency); then this process
   sends the rest at the fixed rate with the record timestamp = send time (confluent-kafka,
   ``linger.ms`` 1). A consumer thread reads the sink from the start with
   ``fetch.wait.max.ms`` 5 and keeps (arrival, output timestamp) per record. Every contender
   carries the input's timestamp to its output (Kafka Streams semantics); for ``stateless``
   that is checked per record against the send time of the output's ``id``.
3. The whole sink is read back and verified; a wrong output, a late send schedule (the
   generator itself more than 5 % behind) or a stall prints no latency.

Latency = arrival - input timestamp (one machine, one clock), over the outputs of the paced
inputs only; p50/p99/max per run, then the median over runs with the min-max spread.

    .venv/bin/python bench/latency.py --quix-python .venv-bench/bin/python \\
        --out docs/bench/latency
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers_workloads import expected_outputs, generate, verify
from peers_throughput import (
    PARTITIONS,
    ROOT,
    Launch,
    _Embedded,
    create_topics,
    launch_spec,
    produce_input,
    read_topic,
    run_contender,
    slug,
    start_any_broker,
    stop_all,
)

DEFAULT_CONTENDERS = "streamrt-1t,streamrt-1t+rdk,quix,kafka-streams-1t"
WARMUP_GAP_S = 0.1
WARMUP_LIMIT_S = 120.0
BEHIND = 0.05  # the generator more than 5 % behind schedule: the run measured nothing


@dataclass
class Run:
    workload: str
    contender: str
    load: float  # fraction of the saturation rate
    target_rate: float
    sent_rate: float = 0.0  # paced inputs / seconds spent sending them
    records: int = 0
    outputs: int = 0
    measured: int = 0  # outputs of paced inputs, the latency sample
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    verified: bool = False
    error: str = ""


class SinkReader(threading.Thread):
    """Reads the sink from offset 0 and keeps (arrival ms, output timestamp ms, value)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "latency-reader",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 5,
            }
        )
        self.consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)]
        )
        self.rows: list[tuple[float, int, bytes | None]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            batch = self.consumer.consume(1000, 0.05)
            now = time.time() * 1000
            self.rows.extend((now, m.timestamp()[1], m.value()) for m in batch if not m.error())
        self.consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)


class Generator:
    """Sends the workload's inputs with timestamp = send time: a slow warm-up, then paced."""

    def __init__(self, bootstrap: str, topic: str, workload: str, records: int) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
        self.topic = topic
        self.inputs = generate(workload, records)
        self.sent_ms: list[int] = []  # per input index (= stateless id)

    def send_one(self) -> bool:
        item = next(self.inputs, None)
        if item is None:
            return False
        ts = int(time.time() * 1000)
        while True:
            try:
                self.producer.produce(self.topic, item[1], item[0], timestamp=ts)
                break
            except BufferError:
                self.producer.poll(0.01)
        self.sent_ms.append(ts)
        self.producer.poll(0)
        return True

    def warm_up(self, reader: SinkReader, procs: list[subprocess.Popen[bytes]]) -> str:
        """One input per 100 ms until an output arrives; '' or why not."""
        deadline = time.monotonic() + WARMUP_LIMIT_S
        while not reader.rows:
            if any(p.poll() is not None for p in procs):
                return "a process exited during warm-up"
            if time.monotonic() > deadline:
                return f"no output within {WARMUP_LIMIT_S:.0f} s of warm-up"
            self.send_one()
            self.producer.flush(5)
            time.sleep(WARMUP_GAP_S)
        return ""

    def paced(self, rate: float) -> tuple[int, float]:
        """Sends the rest at ``rate``/s; (paced inputs, seconds it took)."""
        start = time.monotonic()
        n = 0
        while True:
            ahead = start + n / rate - time.monotonic()
            if ahead > 0.001:
                time.sleep(ahead)
            if not self.send_one():
                break
            n += 1
        seconds = time.monotonic() - start
        if self.producer.flush(30):
            raise RuntimeError("inputs not fully produced")
        return n, seconds


def contender_env(spec: Launch, workload: str, bootstrap: str, tag: str) -> dict[str, str]:
    """The environment ``peers_throughput`` gives a contender, with this run's topics."""
    env = dict(os.environ)
    env.update(spec.env)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
            "PEERS_WORKLOAD": workload,
            "PEERS_BOOTSTRAP": bootstrap,
            "PEERS_IN": f"{tag}-in",
            "PEERS_OUT": f"{tag}-out",
            "PEERS_APP_ID": tag,
            "PEERS_PARTITIONS": str(PARTITIONS),
        }
    )
    return env


def start_procs(spec: Launch, env: dict[str, str], tmp: Path, tag: str) -> list[Any]:
    logs = ROOT / "bench" / "results" / "latency-logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for i, argv in enumerate(spec.argvs):
        env_i = dict(env, PEERS_STATE_DIR=str(tmp / "state" / tag / str(i)))
        log = open(logs / f"{tag}-{i}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(subprocess.Popen(argv, env=env_i, stdout=log, stderr=subprocess.STDOUT))
    return procs


def wait_outputs(reader: SinkReader, expected: int, procs: list[Any], limit: float) -> str:
    deadline = time.monotonic() + limit
    while len(reader.rows) < expected:
        if any(p.poll() is not None for p in procs):
            return "a process exited early"
        if time.monotonic() > deadline:
            return f"stalled: {len(reader.rows)}/{expected} outputs {limit:.0f} s after sending"
        time.sleep(0.05)
    return ""


def latencies(run: Run, gen: Generator, rows: list[Any], paced_from: int) -> list[float]:
    """Arrival - input timestamp of the outputs of paced inputs; sets ``run.error`` when a
    stateless output does not carry its input's timestamp."""
    first_paced_ms = gen.sent_ms[paced_from] if paced_from < len(gen.sent_ms) else 0
    if run.workload == "stateless":
        for _arrival, ts, raw in rows:
            sent = gen.sent_ms[json.loads(raw)["id"]]
            if ts != sent:
                run.error = f"output timestamp {ts} is not its input's ({sent})"
                return []
    return [arrival - ts for arrival, ts, _raw in rows if ts >= first_paced_ms]


def summarize(run: Run, values: list[float]) -> None:
    if not values:
        run.error = run.error or "no outputs of paced inputs"
        return
    values.sort()
    run.measured = len(values)
    run.p50_ms = values[len(values) // 2]
    run.p99_ms = values[min(len(values) - 1, int(len(values) * 0.99))]
    run.max_ms = values[-1]


def latency_run(run: Run, bootstrap: str, tmp: Path, args: argparse.Namespace, n: int) -> Run:
    spec = launch_spec(run.contender, run.workload, args)
    if isinstance(spec, str):
        run.error = f"skipped: {spec}"
        return run
    tag = f"lat-{run.workload}-{slug(run.contender)}-{int(run.load * 100)}-{n}"
    create_topics(bootstrap, [f"{tag}-in", f"{tag}-out"])
    run.records = max(100, int(run.target_rate * args.seconds))
    reader = SinkReader(bootstrap, f"{tag}-out")
    reader.start()
    gen = Generator(bootstrap, f"{tag}-in", run.workload, run.records)
    procs = start_procs(spec, contender_env(spec, run.workload, bootstrap, tag), tmp, tag)
    paced_from = 0
    try:
        run.error = gen.warm_up(reader, procs)
        if not run.error:
            paced_from = len(gen.sent_ms)
            count, seconds = gen.paced(run.target_rate)
            run.sent_rate = count / seconds if seconds > 0 else 0.0
            expected = expected_outputs(run.workload, run.records)
            run.error = wait_outputs(reader, expected, procs, args.drain_timeout)
    finally:
        stop_all(procs)
        reader.stop()
    output = list(read_topic(bootstrap, f"{tag}-out"))
    run.outputs = len(output)
    problem = verify(run.workload, run.records, output)
    if problem:
        run.error = "; ".join(filter(None, [run.error, f"WRONG OUTPUT: {problem}"]))
        return run
    run.verified = True
    if not run.error and run.sent_rate < (1 - BEHIND) * run.target_rate:
        run.error = f"generator behind: sent {run.sent_rate:,.0f}/s of {run.target_rate:,.0f}/s"
    if not run.error:
        summarize(run, latencies(run, gen, reader.rows, paced_from))
    return run


def saturation(name: str, wl: str, bootstrap: str, tmp: Path, args: argparse.Namespace) -> float:
    """Input records/s of a max-rate run of ``peers_throughput`` (0 when it gave none)."""
    if args.rate:
        return float(args.rate)
    r = run_contender(name, wl, args.sat_records[wl], bootstrap, tmp, args)
    print(f"{wl:>9} {name:<20} saturation: {r.rate or 0:,.0f}/s {r.error}", flush=True)
    return r.rate or 0.0


def spread(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "-"
    return f"{statistics.median(got):,.0f} ({min(got):,.0f}-{max(got):,.0f})"


def table(runs: list[Run]) -> str:
    lines = [
        "| workload | contender | load | rate/s | p50 ms (min-max) | p99 ms (min-max) | runs ok |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    keys = list(dict.fromkeys((r.workload, r.contender, r.load) for r in runs))
    for wl, name, load in keys:
        group = [r for r in runs if (r.workload, r.contender, r.load) == (wl, name, load)]
        ok = [r for r in group if r.p50_ms is not None]
        errors = sorted({r.error.split(":")[0] for r in group if r.error})
        lines.append(
            f"| {wl} | {name} | {load:.0%} | {group[0].target_rate:,.0f} "
            f"| {spread([r.p50_ms for r in ok])} | {spread([r.p99_ms for r in ok])} "
            f"| {len(ok)}/{len(group)}{' ' + '; '.join(errors) if errors else ''} |"
        )
    return "\n".join(lines)


def measure(wl: str, name: str, bootstrap: str, tmp: Path, args: argparse.Namespace) -> list[Run]:
    sat = saturation(name, wl, bootstrap, tmp, args)
    if not sat:
        return [Run(wl, name, 0.0, 0.0, error="no saturation rate")]
    runs = []
    for load in args.loads:
        for n in range(args.runs):
            run = latency_run(Run(wl, name, load, load * sat), bootstrap, tmp, args, n)
            runs.append(run)
            shown = (
                f"p50 {run.p50_ms:.0f} ms p99 {run.p99_ms:.0f} ms max {run.max_ms:.0f} ms "
                f"({run.measured} outputs, sent {run.sent_rate:,.0f}/s)"
                if run.p50_ms is not None
                else run.error
            )
            print(f"{wl:>9} {name:<20} {load:.0%} of {sat:,.0f}/s run {n}: {shown}", flush=True)
            if run.error.startswith("skipped"):
                return runs
    return runs


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="stateless")
    ap.add_argument("--contenders", default=DEFAULT_CONTENDERS)
    ap.add_argument("--sat-records", type=int, default=40_000, help="stateless max-rate run")
    ap.add_argument("--session-sat-records", type=int, default=20_000)
    ap.add_argument("--rate", type=float, help="saturation rate for every contender (no run)")
    ap.add_argument("--loads", default="0.5,0.9", help="fractions of the saturation rate")
    ap.add_argument("--seconds", type=float, default=10.0, help="paced seconds per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--drain-timeout", type=float, default=60.0)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per saturation run")
    ap.add_argument("--quix-python", default=str(ROOT / ".venv-bench" / "bin" / "python"))
    ap.add_argument("--kafka", choices=("embedded", "apache"), default="embedded")
    ap.add_argument("--out", help="directory for results.json")
    args = ap.parse_args()
    args.loads = [float(x) for x in args.loads.split(",")]
    args.sat_records = {"stateless": args.sat_records, "sessions": args.session_sat_records}
    args.commit_interval_ms = None
    args.profile = None
    return args


def main() -> None:
    args = parse_args()
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if any(w not in args.sat_records for w in workloads):
        raise SystemExit("workloads: stateless, sessions")
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    runs: list[Run] = []
    started = time.strftime("%Y-%m-%d %H:%M")
    with tempfile.TemporaryDirectory(prefix="latency-") as tmpdir:
        tmp = Path(tmpdir)
        broker, bootstrap = start_any_broker(args.kafka, tmp)
        args.broker_pid = broker.proc.pid if isinstance(broker, _Embedded) else None
        try:
            for wl in workloads:
                if not args.rate:
                    create_topics(bootstrap, [f"peers-{wl}-in"])
                    produce_input(bootstrap, f"peers-{wl}-in", wl, args.sat_records[wl])
                for name in contenders:
                    runs += measure(wl, name, bootstrap, tmp, args)
        finally:
            broker.stop()
    print()
    print(table(runs))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        meta = {"date": started, "cores": os.cpu_count(), "broker": args.kafka}
        meta["command"] = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
        doc = {"meta": meta, "runs": [asdict(r) for r in runs]}
        (out / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nwrote {out}/results.json")


if __name__ == "__main__":
    main()
