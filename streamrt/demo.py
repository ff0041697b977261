"""``streamrt demo``: the README's first command, the main job.

On an embedded broker (or Apache Kafka: ``--kafka apache``) it runs the heavy-state sessions
app as 3 instances x 2 threads under a steady load, rolling-restarts every instance, and
reports what the deploy cost: rebalances, tasks moved, records and bytes restored, the longest
per-partition processing gap, survivors that had to reconcile, records processed and a check
of the app's output against its input. Then the same static deploy on the streams group
protocol (``group.protocol=streams``, KIP-1071: the broker assigns the tasks), the same deploy
as a hand-off (each new process starts up beside the old one,
which hands over when it is ready: ``streamrt run --handoff``), under exactly-once
(``processing.guarantee=exactly_once_v2``) and with dynamic membership, side by side. Sizes
are flags; the defaults finish in a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ("reading", "register", "side_by_side")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run the main job on the embedded broker and print a report",
        description="Rolling-restart the sessions app with static membership, as a hand-off, "
        "then with dynamic membership, "
        "under load on an embedded broker, and compare what each deploy cost.",
    )
    p.add_argument("--instances", type=int, default=3, help="instances (default 3)")
    p.add_argument("--threads", type=int, default=2, help="stream threads each (default 2)")
    p.add_argument("--partitions", type=int, default=12, help="input partitions (default 12)")
    p.add_argument(
        "--users",
        type=int,
        default=100_000,
        help="users = profiles in state, ~2.2 KB each (default 100000: ~220 MB)",
    )
    p.add_argument("--rate", type=float, default=300.0, help="clicks/s during the deploy")
    p.add_argument(
        "--restart-delay",
        type=float,
        default=2.0,
        help="seconds each instance stays down after it exited, as a pod being replaced "
        "does (default 2; 0 restarts in place)",
    )
    p.add_argument(
        "--session-timeout-ms",
        type=int,
        default=10_000,
        help="the instances' session.timeout.ms (default 10000): a static instance that is down "
        "longer than this is removed, and its partitions move",
    )
    _add_skips(p)
    p.add_argument(
        "--kafka",
        choices=("embedded", "apache"),
        default="embedded",
        help="the broker: streamrt's embedded broker (default), or Apache Kafka 4.3.1 from "
        "Maven Central, 1 broker as `streamrt dev kafka` starts it (a fresh one per deploy)",
    )
    p.add_argument("--work-dir", type=Path, default=None, help="where to keep it (default: temp)")
    p.add_argument("--json", type=Path, default=None, help="also write both reports as JSON")
    p.add_argument(
        "--console-port",
        type=int,
        default=8070,
        help="serve the live web console on 127.0.0.1:PORT while the deploys run "
        "(default 8070; 0: any free port; -1: no console)",
    )
    p.set_defaults(func=run_demo)


def _add_skips(p: Any) -> None:
    """The flags that leave a contender out."""
    p.add_argument("--static-only", action="store_true", help="skip the dynamic comparison")
    p.add_argument("--no-handoff", action="store_true", help="skip the hand-off deploy")
    p.add_argument(
        "--no-streams",
        action="store_true",
        help="skip the static deploy on the streams group protocol (group.protocol=streams; "
        "skipped on --kafka apache: Apache Kafka 4.3 has no static streams-group members)",
    )
    p.add_argument(
        "--no-eos",
        action="store_true",
        help="skip the static deploy under processing.guarantee=exactly_once_v2",
    )


def side_by_side(reports: list[Any]) -> list[str]:
    """A comparison table, one column per contender."""
    rows = [
        ("", [r.contender for r in reports]),
        ("rebalances during deploy", [str(r.rebalances) for r in reports]),
        ("  counted by the broker", [_or_na(r.coordinator_rebalances) for r in reports]),
        ("tasks moved", [str(r.tasks_moved) for r in reports]),
        ("records restored", [f"{r.restored_records:,}" for r in reports]),
        ("bytes restored", [f"{r.restored_bytes / 1e6:,.1f} MB" for r in reports]),
        ("longest partition gap", [f"{r.longest_gap_s:.2f} s" for r in reports]),
        ("gap before deploy", [f"{r.baseline_gap_s:.2f} s" for r in reports]),
        (
            "survivors not reconciled",
            [f"{r.survivors_not_reconciled}/{r.survivors}" for r in reports],
        ),
        ("deploy duration", [f"{r.timeline.duration:.1f} s" for r in reports]),
        ("records in / out", [f"{r.records_in:,} / {r.records_out:,}" for r in reports]),
        ("state size", [f"{r.state_bytes / 1e6:.1f} MB" for r in reports]),
        ("output correct", ["yes" if r.correctness.ok else "NO" for r in reports]),
        ("leader's restart step", [_leader_step(r) for r in reports]),
    ]
    width = max(len(label) for label, _ in rows) + 2
    col = max(len(v) for _, vals in rows for v in vals) + 2
    return [label.ljust(width) + "".join(v.rjust(col) for v in vals) for label, vals in rows]


def reading(reports: list[Any]) -> list[str]:
    """What the numbers say, in a sentence per contender."""
    out = []
    for r in reports:
        downtime = max((s.downtime for s in r.timeline.steps), default=0.0)
        if r.settings.get("mode") == "handoff":
            out.append(
                f"{r.contender}: each new process started up while the old one kept "
                f"processing, then took over its partitions and state ({r.rebalances} "
                f"rebalances, {r.restored_bytes / 1e6:,.1f} MB restored); the longest gap, "
                f"{r.longest_gap_s:.1f} s, no longer includes the start-up time."
            )
        elif r.rebalances == r.tasks_moved == r.restored_bytes == 0:
            out.append(
                f"{r.contender}: nothing moved and nothing was restored; each partition waited "
                f"for its own instance (longest gap {r.longest_gap_s:.1f} s, longest instance "
                f"downtime {downtime:.1f} s)."
            )
        else:
            share = r.restored_bytes / r.state_bytes if r.state_bytes else 0.0
            out.append(
                f"{r.contender}: {r.rebalances} rebalances moved partitions at once and "
                f"{r.restored_bytes / 1e6:,.0f} MB was restored ({share:.1f}x the state); "
                "restore time grows with state size, an instance's downtime does not."
            )
    return out


def _modes(args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    """(name, static, mode) of each deploy to run, in the report's column order."""
    modes = [("static", True, "restart")]
    if not args.no_streams and args.kafka == "apache":
        print("skipping the streams-protocol deploy: Apache Kafka 4.3 refuses static members")
    elif not args.no_streams:
        modes.append(("streams", True, "restart"))
    if not args.no_handoff:
        modes.append(("handoff", True, "handoff"))
    if not args.no_eos:
        modes.append(("eos", True, "restart"))
    if not args.static_only:
        modes.append(("dynamic", False, "restart"))
    return modes


def _or_na(value: int | None) -> str:
    """The embedded broker's count; Apache Kafka has no such metric."""
    return "n/a" if value is None else str(value)


def _leader_step(report: Any) -> str:
    if report.settings.get("group_protocol") == "streams":
        return "no leader"  # the broker assigns a streams group's tasks
    step = report.leader_restart_step
    return "?" if step is None else f"{step} of {len(report.timeline.steps)}"


def run_demo(args: argparse.Namespace) -> int:
    if logging.getLogger().level > logging.DEBUG:  # progress lines, not the broker's log
        logging.getLogger("streamrt").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="streamrt-demo-") as tmp:
        base = args.work_dir or Path(tmp)
        reports = []
        began = time.monotonic()
        with _console(args) as rest_ports:
            for name, static, mode in _modes(args):
                work_dir = base / name
                with _broker(args.kafka, work_dir) as bootstrap:
                    report = _run_one(
                        args,
                        work_dir,
                        static,
                        mode,
                        bootstrap,
                        rest_ports,
                        eos=name == "eos",
                        streams=name == "streams",
                    )
                reports.append(report)
    print(f"== side by side ({time.monotonic() - began:.0f}s in all) ==")
    print("\n".join(side_by_side(reports)))
    print()
    print("\n".join(reading(reports)))
    if args.json:
        args.json.write_text(json.dumps([r.to_json() for r in reports], indent=1))
    return 0 if all(r.correctness.ok for r in reports) else 1


@contextlib.contextmanager
def _console(args: argparse.Namespace) -> Iterator[tuple[int, ...]]:
    """The instances' REST ports, and the console over them, up for every deploy (read-only:
    no token). Each deploy starts its instances on the same ports, so the page follows along."""
    if args.console_port < 0:
        yield ()
        return
    import socket

    from streamrt.rest.console_proxy import ConsoleThread

    ports = []
    for _ in range(args.instances):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request it passes on
    try:
        console = ConsoleThread(urls, None, port=args.console_port).start()
    except OSError:  # the port is taken: any free one
        console = ConsoleThread(urls, None, port=0).start()
    print(f"console: {console.url}  (live: open it to watch the deploys)", flush=True)
    try:
        yield tuple(ports)
    finally:
        console.stop()


@contextlib.contextmanager
def _broker(kind: str, work_dir: Path) -> Iterator[str]:
    """``""`` (the scenario starts its embedded broker) or a fresh Apache Kafka's bootstrap."""
    if kind != "apache":
        yield ""
        return
    from streamrt.dev.apache_kafka import ApacheKafka

    print("starting Apache Kafka (1 broker; the first run downloads it from Maven Central)")
    with ApacheKafka(1, work_dir=work_dir / "apache-kafka") as kafka:
        print(f"Apache Kafka {kafka.version} at {kafka.bootstrap}", flush=True)
        yield kafka.bootstrap


def _run_one(
    args: argparse.Namespace,
    work_dir: Path,
    static: bool,
    mode: str,
    bootstrap: str,
    rest_ports: tuple[int, ...] = (),
    *,
    eos: bool = False,
    streams: bool = False,
) -> Any:
    from streamrt.deploy import ScenarioConfig, run_scenario

    cfg = ScenarioConfig(
        work_dir=work_dir,
        static=static,
        mode=mode,
        instances=args.instances,
        threads=args.threads,
        partitions=args.partitions,
        users=args.users,
        rate=args.rate,
        restart_delay=args.restart_delay if mode == "restart" else 0.0,
        bootstrap=bootstrap,
        processing_guarantee="exactly_once_v2" if eos else "at_least_once",
        rest_ports=rest_ports,
        session_timeout_ms=args.session_timeout_ms,
        group_protocol="streams" if streams else "classic",
    )
    report = run_scenario(cfg, lambda msg: print(msg, flush=True))
    print()
    print(f"== {report.contender}: rolling deploy report ==")
    print("\n".join(report.lines()))
    print(flush=True)
    return report
