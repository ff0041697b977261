"""``streamrt dev kafka``: run Apache Kafka (KRaft) on 127.0.0.1 in the foreground."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from streamrt.cli_options import add_key_values, parse_key_values

__all__ = ("register",)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    dev = sub.add_parser("dev", help="developer tools (Apache Kafka, a schema registry)")
    dev_sub = dev.add_subparsers(dest="dev_command", metavar="DEV_COMMAND")
    p = dev_sub.add_parser(
        "kafka",
        help="run Apache Kafka (KRaft) from Maven Central on 127.0.0.1 until Ctrl-C",
        description=(
            "Start a pinned Apache Kafka assembled from Maven Central (downloaded once into "
            "~/.cache/streamrt): 1 broker, or 3 combined broker+controller nodes with a "
            "3-voter quorum, replication factor 3 and min.insync.replicas=2. Prints the "
            "bootstrap servers, stops cleanly on SIGTERM/SIGINT."
        ),
    )
    p.add_argument("--brokers", type=int, choices=(1, 3), default=1, help="1 or 3 (default 1)")
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="first broker port (brokers port..port+n-1, controllers the next n; default: free)",
    )
    p.add_argument("--data-dir", type=Path, help="work directory (default: a temporary one)")
    add_key_values(p, "--override", "a broker config for every node (repeatable)")
    p.add_argument("--heap", default="320m", help="-Xmx of each JVM (default 320m)")
    p.set_defaults(func=run_kafka)
    r = dev_sub.add_parser(
        "registry",
        help="run Apicurio Registry (Confluent-compatible API) on 127.0.0.1 until Ctrl-C",
        description=(
            "Start Apicurio Registry from Maven Central (downloaded once into "
            "~/.cache/streamrt; Java 17) with in-memory storage and global compatibility "
            "BACKWARD. Prints the schema.registry.url; stops cleanly on SIGTERM/SIGINT."
        ),
    )
    r.add_argument("--port", type=int, default=None, help="HTTP port (default: a free one)")
    r.add_argument("--data-dir", type=Path, help="work directory (default: a temporary one)")
    r.add_argument("--heap", default="384m", help="-Xmx of the JVM (default 384m)")
    r.set_defaults(func=run_registry)
    dev.set_defaults(func=lambda _args: dev.print_help() or 2)


def _stop_on_signals() -> threading.Event:
    """An event SIGTERM and SIGINT set: the dev servers run until it is set, then stop."""
    stop = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def run_kafka(args: argparse.Namespace) -> int:
    from streamrt.dev.apache_kafka import ApacheKafka, KafkaStartError, KafkaUnavailable

    overrides = parse_key_values(args.override, "--override")
    work = args.data_dir or Path(tempfile.mkdtemp(prefix="streamrt-apache-kafka-"))
    kafka = ApacheKafka(
        args.brokers, work_dir=work, overrides=overrides, port=args.port, heap=args.heap
    )
    stop = _stop_on_signals()
    try:
        kafka.start()
    except (KafkaUnavailable, KafkaStartError) as exc:
        print(f"streamrt: error: {exc}", file=sys.stderr)
        return 1
    print(f"Apache Kafka {kafka.version}: {args.brokers} broker(s) ready", flush=True)
    print(f"bootstrap.servers={kafka.bootstrap}", flush=True)
    print(f"logs and data in {work}; Ctrl-C stops", flush=True)
    try:
        while not stop.wait(1.0):
            kafka.check_alive()
    except RuntimeError as exc:
        print(f"streamrt: error: {exc}", file=sys.stderr)
        return 1
    finally:
        kafka.stop()
    print("stopped", flush=True)
    return 0


def run_registry(args: argparse.Namespace) -> int:
    from streamrt.dev.apicurio import ApicurioRegistry, RegistryUnavailable

    work = args.data_dir or Path(tempfile.mkdtemp(prefix="streamrt-registry-"))
    registry = ApicurioRegistry(work, port=args.port, heap=args.heap)
    stop = _stop_on_signals()
    try:
        registry.start()
    except RegistryUnavailable as exc:
        print(f"streamrt: error: {exc}", file=sys.stderr)
        return 1
    print(f"Apicurio Registry {registry.version} ready", flush=True)
    print(f"schema.registry.url={registry.url}", flush=True)
    print(f"log in {registry.log_file}; Ctrl-C stops", flush=True)
    try:
        while not stop.wait(1.0):
            if not registry.running():
                print(
                    f"streamrt: error: the registry died:\n{registry.log_tail()}", file=sys.stderr
                )
                return 1
    finally:
        registry.stop()
    print("stopped", flush=True)
    return 0
