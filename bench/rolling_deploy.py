"""Rolling-deploy benchmark: what one rolling restart costs, per contender.

    .venv/bin/python bench/rolling_deploy.py --out docs/bench/rolling_deploy

Contenders (``--runs``):
- ``static``: KIP-345 static membership; ``dynamic``: the same app without group.instance.id;
- ``handoff``: static membership, each new process started beside the old one with
  ``streamrt run --handoff``; the old one hands over once the new one has started up;
  ``handoff-eos``: the same under ``processing.guarantee=exactly_once_v2``;
- ``faust``: the same app logic on faust-streaming with ``consumer_group_instance_id``
  (``bench/faust_sessions.py``; one worker per instance, faust has no stream threads);
  ``faust-dynamic``: the same without it;
- ``kafka-streams``: the same fold on Kafka Streams 4.3.1 (``bench/kafka-streams/``, built with
  Maven on first use), ``--threads`` stream threads per instance, static membership (Kafka
  Streams gives each thread's consumer ``group.instance.id`` ``<instance>-<thread index>``);
  ``kafka-streams-dynamic``: the same without it. The JVM publishes the same lifecycle events
  (``bench/kafka-streams/.../Lifecycle.java``): generations seen by its consumers, restored
  records (StateRestoreListener) and bytes (its restore consumer);
- edge cases: ``static-late`` (each instance stays down longer than session.timeout.ms) and
  ``static-kill`` (SIGKILL instead of SIGTERM); ``static-eos`` and ``static-kill-eos`` are
  the same under ``processing.guarantee=exactly_once_v2``.

``--startup-delay 0,5`` runs every contender once per delay: the app sleeps that long at import
(``SESSIONS_STARTUP_DELAY``), as a real app's slow start-up.

Every run restarts every instance, so the group leader's instance is always among them; the
report names it and the step that restarted it. Writes one JSON per run, ``table.md`` and
``gaps.png`` (processing gap per partition over the deploy).

``--state-sizes 0.1,0.5,1,2`` sweeps the state size instead (GB; streamrt contenders only,
``--runs`` defaults to ``static,dynamic``): each size is ``users`` profiles written straight
into the store's changelog, which the app's first start restores into RocksDB, then the
deploy runs as usual. Writes ``<size>GB-<run>.json``, ``table.md`` and ``cost_by_state.png``
(longest gap, bytes restored and deploy time against the state size). Each run's broker log
and state are deleted when it is done (the 2 GB runs use ~7 GB of disk at their peak).
Use a production session timeout (``--session-timeout-ms 45000``, Kafka's default): on a
loaded machine a restarted process can take longer than the default 10 s to rejoin.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from streamrt.client_config import load_properties
from streamrt.deploy import DeployReport, ScenarioConfig, run_scenario
from streamrt.deploy.loadgen import profile_bytes

RUNS = (
    "handoff",
    "handoff-eos",
    "static",
    "dynamic",
    "faust",
    "faust-dynamic",
    "kafka-streams",
    "kafka-streams-dynamic",
    "static-late",
    "static-kill",
    "static-eos",
    "static-kill-eos",
)
FAUST_WORKER = (sys.executable, str(Path(__file__).with_name("faust_sessions.py")), "worker")
FAUST_WORKER += ("--without-web", "--loglevel", "info")


def config_for(
    run: str, args: argparse.Namespace, work: Path, delay: float = 0.0
) -> ScenarioConfig:
    late = run == "static-late"
    faust = run.startswith("faust")
    kstreams = run.startswith("kafka-streams")
    static = run not in ("dynamic", "faust-dynamic", "kafka-streams-dynamic")
    command: tuple[str, ...] = FAUST_WORKER if faust else ()
    label = f"faust-streaming {'static' if static else 'dynamic'}" if faust else f"streamrt {run}"
    if kstreams:
        from _kafka_streams import command as kafka_streams

        command = tuple(kafka_streams("sessions", "--threads", str(args.threads)))
        label = f"Kafka Streams {'static' if static else 'dynamic'}"
    return ScenarioConfig(
        work_dir=work / f"{run}-{delay:g}s",
        static=static,
        instances=args.instances,
        threads=1 if faust else args.threads,
        partitions=args.partitions,
        users=args.users,
        rate=args.rate,
        session_timeout_ms=args.session_timeout_ms,
        restart_delay=args.session_timeout_ms / 1000 + 3 if late else args.restart_delay,
        stop_signal=signal.SIGKILL if run.startswith("static-kill") else signal.SIGTERM,
        processing_guarantee="exactly_once_v2" if run.endswith("-eos") else "at_least_once",
        label=f"{label} +{delay:g}s start" if delay else label,
        command=command,
        mode="handoff" if run.startswith("handoff") else "restart",
        startup_delay=delay,
    )


def _leader(r: DeployReport) -> str:
    if r.leader is None:
        return "?"
    who = r.leader["instance_id"] or f"pid {r.leader['pid']}"
    step = r.leader_restart_step
    return f"{who}, step {step}" if step else f"{who}, not restarted"


def table(reports: list[DeployReport]) -> list[str]:
    head = "| run | rebalances (coordinator) | records restored | MB restored | longest gap s | "
    head += "gap before s | deploy s | in / out | correct | leader restarted |"
    lines = [head, "|" + "---|" * 10]
    for r in reports:
        c = r.correctness
        verdict = "exact" if c.exactly_once_result else ("ok (+dups)" if c.ok else "WRONG")
        coordinator = "?" if r.coordinator_rebalances is None else r.coordinator_rebalances
        lines.append(
            f"| {r.contender} | {r.rebalances} ({coordinator}) | {r.restored_records:,} | "
            f"{r.restored_bytes / 1e6:.1f} | {r.longest_gap_s:.2f} | {r.baseline_gap_s:.2f} | "
            f"{r.timeline.duration:.1f} | {r.records_in:,} / {r.records_out:,} | "
            f"{verdict} | {_leader(r)} |"
        )
    return lines


def _versus(a: DeployReport, b: DeployReport) -> str:
    ratio = f"{a.longest_gap_s / b.longest_gap_s:.2f}" if b.longest_gap_s else "n/a"
    deploy_a, deploy_b = a.timeline.duration, b.timeline.duration
    return (
        f"{a.contender} vs {b.contender}: rebalances {a.rebalances} vs {b.rebalances}; "
        f"bytes restored {a.restored_bytes:,} vs {b.restored_bytes:,}; "
        f"longest gap {a.longest_gap_s:.2f}s vs {b.longest_gap_s:.2f}s (ratio {ratio}); "
        f"deploy {deploy_a:.1f}s vs {deploy_b:.1f}s (ratio {deploy_a / deploy_b:.2f})"
    )


def headline(reports: list[DeployReport]) -> list[str]:
    """Hand-off (else static) against the others, per start-up delay."""
    out = []
    for delay in sorted({r.settings.get("startup_delay", 0.0) for r in reports}):
        suffix = f" +{delay:g}s start" if delay else ""
        by = {r.contender.removesuffix(suffix): r for r in reports if r.contender.endswith(suffix)}
        by = {k: r for k, r in by.items() if r.settings.get("startup_delay", 0.0) == delay}
        base = by.get("streamrt handoff") or by.get("streamrt static")
        if base is None:
            continue
        names = (
            "streamrt static",
            "streamrt dynamic",
            "faust-streaming static",
            "Kafka Streams static",
            "Kafka Streams dynamic",
        )
        out += [_versus(base, by[n]) for n in names if n in by and by[n] is not base]
    return out


def chart(reports: list[DeployReport], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(reports), 1, figsize=(10, 2.6 * len(reports)), sharey=True)
    for ax, r in zip(axes if len(reports) > 1 else [axes], reports, strict=True):
        t0 = r.timeline.start
        for partition, points in sorted(r.gap_points.items()):
            xs = [t - t0 for t, _ in points]
            ax.plot(xs, [g for _, g in points], lw=0.8, label=f"p{partition}")
        for step in r.timeline.steps:
            ax.axvline(step.stop_sent - t0, color="grey", ls=":", lw=0.8)
        ax.set_title(
            f"{r.contender}: {r.rebalances} rebalances, "
            f"{r.restored_bytes / 1e6:.1f} MB restored, longest gap {r.longest_gap_s:.2f}s",
            fontsize=9,
        )
        ax.set_ylabel("gap (s)")
    axes_list = axes if len(reports) > 1 else [axes]
    axes_list[-1].set_xlabel("seconds since the deploy began (dotted: a stop signal)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


SWEEP_RUNS = ("static", "dynamic", "handoff", "static-kill")


def state_sweep(args: argparse.Namespace, work: Path) -> int:
    """Every run in ``--runs`` at every ``--state-sizes``, state preloaded via the changelog.
    The table and chart cover every ``<size>GB-<run>.json`` in ``--out``, earlier sweeps'
    too, so one size can be re-run alone."""
    runs = args.runs.split(",") if args.runs != ",".join(RUNS) else ["static", "dynamic"]
    if bad := [r for r in runs if r not in SWEEP_RUNS]:
        raise SystemExit(f"--state-sizes runs streamrt only ({', '.join(SWEEP_RUNS)}): {bad}")
    per_user = profile_bytes()
    for size in [float(s) for s in args.state_sizes.split(",")]:
        for run in runs:
            args.users = round(size * 1e9 / per_user)
            cfg = config_for(run, args, work)
            cfg.work_dir = work / f"{size:g}GB-{run}"
            cfg.preload = "changelog"
            cfg.label = f"streamrt {run} {size:g} GB"
            try:
                report = run_scenario(cfg, lambda m: print(m, flush=True))
            finally:  # the broker's log and the state stores; the instances' logs stay
                for data in (cfg.work_dir / "broker", *cfg.work_dir.glob("state-*")):
                    shutil.rmtree(data, ignore_errors=True)
            # without the per-record gap series (MBs per run; the sweep charts the maxima)
            result = {**report.to_json(), "state_gb": size, "run": run, "gap_points": {}}
            (args.out / f"{size:g}GB-{run}.json").write_text(json.dumps(result, indent=1))
            print("\n".join(report.lines()), flush=True)
    results = [json.loads(p.read_text()) for p in sorted(args.out.glob("*GB-*.json"))]
    results.sort(key=lambda r: (r["state_gb"], SWEEP_RUNS.index(r["run"])))
    lines = [*state_table(results), "", *state_versus(results)]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    state_chart(results, args.out / "cost_by_state.png")
    print("\n".join(lines))
    return 0


def _deploy_s(r: dict[str, Any]) -> float:
    return float(r["timeline"]["end"] - r["timeline"]["start"])


def _first_start(r: dict[str, Any]) -> str:
    """Seconds from start to RUNNING of the first start, which restored the preload."""
    note = next((n for n in r["notes"] if n.startswith("first start restored")), "")
    return note.rsplit(" in ", 1)[-1].split("s ")[0] if note else "?"


def state_table(results: list[dict[str, Any]]) -> list[str]:
    head = "| state GB | run | state MB (changelog) | rebalances (coordinator) | MB restored | "
    head += "x state | longest gap s | deploy s | first start s | correct |"
    lines = [head, "|" + "---|" * 10]
    for r in results:
        c = r["correctness"]
        verdict = "exact" if c["ok"] and not c["over"] else ("ok (+dups)" if c["ok"] else "WRONG")
        if not c["ok"]:
            verdict += f" ({c['under']} under, {c['missing']} missing of {c['users']:,})"
        coordinator = "?" if r["coordinator_rebalances"] is None else r["coordinator_rebalances"]
        lines.append(
            f"| {r['state_gb']:g} | {r['run']} | {r['state_bytes'] / 1e6:,.0f} | "
            f"{r['rebalances']} ({coordinator}) | {r['restored_bytes'] / 1e6:,.1f} | "
            f"{r['restored_bytes'] / max(r['state_bytes'], 1):.2f} | {r['longest_gap_s']:.2f} | "
            f"{_deploy_s(r):.1f} | {_first_start(r)} | {verdict} |"
        )
    return lines


def state_versus(results: list[dict[str, Any]]) -> list[str]:
    """Static against dynamic at each size: the ratios the chart shows."""
    out = []
    for size in sorted({r["state_gb"] for r in results}):
        runs = {r["run"]: r for r in results if r["state_gb"] == size}
        if "static" in runs and "dynamic" in runs:
            a, b = runs["static"], runs["dynamic"]
            gap = a["longest_gap_s"] / b["longest_gap_s"] if b["longest_gap_s"] else float("nan")
            out.append(
                f"{size:g} GB, static vs dynamic: rebalances {a['rebalances']} vs "
                f"{b['rebalances']}; MB restored {a['restored_bytes'] / 1e6:,.0f} vs "
                f"{b['restored_bytes'] / 1e6:,.0f}; longest gap {a['longest_gap_s']:.2f}s vs "
                f"{b['longest_gap_s']:.2f}s (ratio {gap:.2f}); deploy {_deploy_s(a):.1f}s vs "
                f"{_deploy_s(b):.1f}s (ratio {_deploy_s(a) / _deploy_s(b):.2f})"
            )
    return out


def state_chart(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    measures: tuple[tuple[str, Callable[[dict[str, Any]], float]], ...] = (
        ("longest per-partition gap (s)", lambda r: float(r["longest_gap_s"])),
        ("MB restored during the deploy", lambda r: r["restored_bytes"] / 1e6),
        ("deploy time (s)", _deploy_s),
    )
    for ax, (title, value) in zip(axes, measures, strict=True):
        for run in dict.fromkeys(r["run"] for r in results):
            points = sorted((r["state_gb"], value(r)) for r in results if r["run"] == run)
            ax.plot([s for s, _ in points], [v for _, v in points], marker="o", label=run)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("state size (GB)")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma list of {', '.join(RUNS)}")
    p.add_argument("--instances", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--users", type=int, default=20_000, help="profiles in state (~2.2 KB each)")
    p.add_argument("--rate", type=float, default=300.0, help="clicks/s during the deploy")
    p.add_argument("--restart-delay", type=float, default=0.0, help="seconds down per instance")
    p.add_argument("--session-timeout-ms", type=int, default=10_000)
    p.add_argument(
        "--startup-delay",
        default="0",
        help="comma list of extra start-up seconds (e.g. 0,5): every run once per delay",
    )
    p.add_argument("--out", type=Path, default=Path("docs/bench/rolling_deploy"))
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/streamrt-bench-rolling"))
    p.add_argument(
        "--kafka",
        choices=("embedded", "apache"),
        default="embedded",
        help="a fresh embedded broker per run (default) or a fresh Apache Kafka 4.3.1 (1 broker)",
    )
    p.add_argument(
        "--state-sizes",
        default="",
        help="comma list of state sizes in GB (e.g. 0.1,0.5,1,2): the state-size sweep",
    )
    p.add_argument(
        "--bootstrap-server",
        help="an existing, empty cluster instead of a fresh broker (one run: the topics stay)",
    )
    p.add_argument(
        "--command-config",
        type=Path,
        help="Kafka client properties (TLS, SASL) for the driver and the instances",
    )
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work_dir / str(int(time.time()))
    if args.state_sizes:
        return state_sweep(args, work)
    reports = []
    for delay in [float(d) for d in args.startup_delay.split(",")]:
        for run in args.runs.split(","):
            cfg = config_for(run, args, work, delay)
            if args.command_config:
                cfg.client = load_properties(args.command_config)
            if args.bootstrap_server:
                cfg.bootstrap = args.bootstrap_server
                report = run_scenario(cfg, lambda m: print(m, flush=True))
            elif args.kafka == "apache":
                from streamrt.dev.apache_kafka import ApacheKafka

                with ApacheKafka(1, work_dir=cfg.work_dir / "apache-kafka") as kafka:
                    cfg.bootstrap = kafka.bootstrap
                    report = run_scenario(cfg, lambda m: print(m, flush=True))
                report.contender += " (Apache Kafka)"
            else:
                report = run_scenario(cfg, lambda m: print(m, flush=True))
            name = f"{run}-{delay:g}s" if delay else run
            (args.out / f"{name}.json").write_text(json.dumps(report.to_json(), indent=1))
            print("\n".join(report.lines()), flush=True)
            reports.append(report)
    lines = [*table(reports), "", *headline(reports)]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    chart(reports, args.out / "gaps.png")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
