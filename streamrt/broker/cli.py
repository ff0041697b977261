"""``streamrt broker``: run the embedded Kafka-protocol broker in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

from streamrt.broker.broker import Broker
from streamrt.broker.config import BROKER_CONFIGS, BrokerConfig, load_properties
from streamrt.cli_options import add_key_values, parse_key_values

__all__ = ("register",)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "broker",
        help="run the embedded Kafka-protocol broker",
        description=(
            "Run a single-node broker that speaks the Kafka wire protocol (clients: aiokafka, "
            "kafka-python, confluent-kafka, kcat). Configs use Apache Kafka's names: pass a "
            "server.properties file and/or --override key=value. Stops cleanly on SIGTERM/SIGINT."
        ),
        epilog="Broker configs: " + ", ".join(sorted(BROKER_CONFIGS)),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9092, help="port to bind (default 9092; 0: any)")
    p.add_argument(
        "--advertised-host", default=None, help="host clients are told to use (default: --host)"
    )
    p.add_argument("--data-dir", type=Path, default=Path("state/broker"), help="log directory")
    p.add_argument("--config-file", type=Path, help="a Kafka-style server.properties file")
    add_key_values(
        p, "--override", "set a broker config, e.g. --override num.partitions=8 (repeatable)"
    )
    p.add_argument(
        "--fsync",
        choices=("always", "interval", "never"),
        help="durability: always = fsync before acks=all is answered (streamrt.log.fsync)",
    )
    p.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port"
    )
    _add_security_arguments(p)
    p.set_defaults(func=run_broker)


def _add_security_arguments(p: argparse.ArgumentParser) -> None:
    """Listeners and SCRAM credentials (``streamrt.broker.security``)."""
    p.add_argument(
        "--listener",
        action="append",
        default=[],
        metavar="NAME://HOST:PORT",
        help="listen here, e.g. SASL_SSL://127.0.0.1:9093 (repeatable; sets 'listeners'; "
        "names map to protocols via listener.security.protocol.map)",
    )
    p.add_argument(
        "--add-scram",
        action="append",
        default=[],
        metavar="SPEC",
        help="store a SCRAM credential before starting, as kafka-storage.sh format, with the "
        "password read from a file or an environment variable so that it never sits in the "
        "broker's command line: 'SCRAM-SHA-256=[name=admin,password-file=/run/secrets/admin]' "
        "or 'SCRAM-SHA-512=[name=admin,password-env=ADMIN_PASSWORD]' (repeatable; an inline "
        "password= is refused)",
    )
    p.add_argument(
        "--add-scram-file",
        type=Path,
        metavar="FILE",
        help="like --add-scram, one spec per line, inline password= allowed (keep the file "
        "private: chmod 600)",
    )


def parse_config(args: argparse.Namespace) -> BrokerConfig:
    values: dict[str, str] = {}
    if args.config_file:
        values.update(load_properties(args.config_file))
    values.update(parse_key_values(args.override, "--override"))
    if args.fsync:
        values["streamrt.log.fsync"] = args.fsync
    if getattr(args, "listener", None):
        values["listeners"] = ",".join(args.listener)
    return BrokerConfig(values)


def _scram_specs(args: argparse.Namespace) -> list[str]:
    from streamrt.broker.security.bootstrap import resolve_cli_spec, specs_from_file

    specs = [resolve_cli_spec(spec) for spec in args.add_scram]
    if getattr(args, "add_scram_file", None) is not None:
        specs += specs_from_file(args.add_scram_file)
    return specs


def run_broker(args: argparse.Namespace) -> int:
    config = parse_config(args)
    specs = _scram_specs(args)
    if specs:
        from streamrt.broker.security.bootstrap import add_scram

        add_scram(args.data_dir, specs)

    async def main() -> None:
        broker = Broker(
            args.data_dir,
            config,
            host=args.host,
            port=args.port,
            advertised_host=args.advertised_host,
            metrics_port=args.metrics_port,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await broker.start()
        print(f"streamrt broker listening on {broker.bootstrap}", flush=True)
        for name, address in broker.listener_addresses.items():
            print(f"  listener {name}: {address}", flush=True)
        await stop.wait()
        await broker.stop()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
    return 0
