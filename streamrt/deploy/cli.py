"""``streamrt deploy rolling``: start N local instances, roll them, print the timeline.

The instances are ``streamrt run`` children of this command (the driver restarts only
processes it started). Readiness comes from the ``<application.id>-events`` topic, so it
needs no REST endpoint. With ``--keep-running`` the instances stay up until Ctrl-C. An
instance that exits unasked (a bad app, a crash) stops the command at once with its name, exit
code and log tail, and the command exits with that code (``streamrt.errors.ChildExited``).

``--command-config FILE`` takes Kafka client properties (TLS, SASL) as Kafka's tools do; the
driver's own clients use them, and the instances get them in a 0600 copy under
``--state-dir`` (``streamrt run --config-file``), never on their command line.
"""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import Any

from streamrt.cli_options import (
    add_bootstrap_server,
    add_command_config,
    add_key_values,
    parse_key_values,
)
from streamrt.client_config import ClientConfig
from streamrt.deploy.event_tail import EventTail
from streamrt.deploy.processes import (
    InstanceSpec,
    LocalInstance,
    sleep_watching,
    write_client_properties,
)
from streamrt.deploy.report import count_rebalances, count_restores
from streamrt.deploy.rolling import MODES, Timeline, rolling_restart, wait_all_running

__all__ = ("register",)


def register(subparsers: Any) -> None:
    deploy = subparsers.add_parser("deploy", help="rolling deploys of local instances")
    sub = deploy.add_subparsers(dest="deploy_command", metavar="ACTION")
    p = sub.add_parser(
        "rolling",
        help="start instances, restart them one at a time, print the timeline",
        description="Start N instances of MODULE:APP, wait until RUNNING, restart each in turn "
        "(signal, wait for exit, start, wait until RUNNING) and report rebalances and restores.",
    )
    p.add_argument(
        "target", help="MODULE:ATTR of an App object, e.g. streamrt.examples.sessions:app"
    )
    p.add_argument("--application-id", required=True, help="application.id of the app")
    add_bootstrap_server(p)
    add_command_config(p, "the driver and every instance")
    p.add_argument("--instances", type=int, default=3, help="instances to run (default 3)")
    p.add_argument("--threads", type=int, default=2, help="num.stream.threads (default 2)")
    p.add_argument("--state-dir", type=Path, default=Path("state"), help="base state dir")
    p.add_argument("--dynamic", action="store_true", help="no group.instance.id (KIP-345 off)")
    p.add_argument("--restart-delay", type=float, default=0.0, help="seconds down per instance")
    p.add_argument("--signal", choices=("TERM", "KILL"), default="TERM", help="stop signal")
    p.add_argument(
        "--mode",
        choices=MODES,
        default="restart",
        help="restart: stop, then start each instance; handoff: start the new process beside "
        "the old one, which hands over its partitions and state once the new one has started "
        "up (needs static membership and the same state dir: same host)",
    )
    add_key_values(p, "--config", "an app config for every instance (repeatable)")
    p.add_argument("--timeline-json", type=Path, help="write the timeline and counts here")
    p.add_argument("--keep-running", action="store_true", help="leave instances up until ^C")
    p.add_argument("--timeout", type=float, default=300.0, help="readiness timeout, seconds")
    p.set_defaults(func=_rolling)


def _rolling(args: argparse.Namespace) -> int:
    if args.mode == "handoff" and args.dynamic:
        print("error: --mode handoff needs static membership (drop --dynamic)")
        return 2
    client = client_file = None
    if args.command_config:
        client = ClientConfig.from_file(args.command_config)
        client.validate()  # a bad setting fails here, naming it, not in every instance
        client_file = write_client_properties(args.state_dir / "client-config.json", client)
    instances = [LocalInstance(s) for s in _specs(args, client_file)]
    stop_signal = signal.SIGKILL if args.signal == "KILL" else signal.SIGTERM
    try:
        with EventTail(args.bootstrap_server, args.application_id, client) as tail:
            for instance in instances:
                instance.start()
            _say(f"started {len(instances)} instances; logs in {args.state_dir / 'logs'}")
            wait_all_running(tail, instances, args.threads, args.timeout)
            _say("all instances RUNNING; rolling restart begins")
            timeline = rolling_restart(
                tail,
                instances,
                threads=args.threads,
                restart_delay=args.restart_delay,
                stop_signal=stop_signal,
                ready_timeout=args.timeout,
                on_step=_say,
                mode=args.mode,
            )
            sleep_watching(instances, 1.0)  # late events (the last restore, a trailing rebalance)
            events = tail.events()
        _summarise(args, timeline, events)
        if args.keep_running:
            _say("instances keep running; Ctrl-C stops them")
            while True:  # until ^C, or an instance exits (ChildExited: its code and log)
                sleep_watching(instances, 3600.0)
        return 0
    finally:
        for instance in instances:
            instance.stop()


def _say(msg: str) -> None:
    print(msg, flush=True)


def _specs(args: argparse.Namespace, client_file: Path | None) -> list[InstanceSpec]:
    """One spec per instance: ``instance-<n>``, its own state dir and log."""
    settings = parse_key_values(args.config, "--config")
    settings["application.id"] = args.application_id
    return [
        InstanceSpec(
            name=f"instance-{n}",
            target=args.target,
            bootstrap=args.bootstrap_server,
            state_dir=args.state_dir / f"instance-{n}",
            threads=args.threads,
            instance_id=None if args.dynamic else f"instance-{n}",
            log_path=args.state_dir / "logs" / f"instance-{n}.log",
            settings=settings,
            client_config_file=client_file,
        )
        for n in range(1, args.instances + 1)
    ]


def _summarise(args: argparse.Namespace, timeline: Timeline, events: list[Any]) -> None:
    """Print the rebalances and restores since the deploy began; write ``--timeline-json``."""
    rebalances, generations = count_rebalances(events, timeline.start)
    records, size = count_restores(events, timeline.start)
    _say(f"rebalances during deploy: {rebalances} (generations {generations})")
    _say(f"restored: {records} records, {size:,} bytes")
    if args.timeline_json:
        summary = {"rebalances": rebalances, "restored_records": records}
        payload = {**timeline.to_json(), **summary, "restored_bytes": size}
        args.timeline_json.write_text(json.dumps(payload, indent=2))
