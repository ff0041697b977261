"""The command-line options several ``streamrt`` commands share, declared and parsed once.

Kafka's tools spell them alike (``--bootstrap-server``, ``--command-config FILE`` with client
security properties, repeatable ``KEY=VALUE`` configs), so every command that takes one gets
the same flag, metavar and parsing here.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterable

from streamrt.errors import ConfigError

__all__ = (
    "add_bootstrap_server",
    "add_command_config",
    "add_env_default",
    "add_key_values",
    "add_output",
    "parse_key_values",
    "positive_seconds",
)

_COMMAND_CONFIG_KEYS = "security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config"


def add_env_default(
    parser: argparse.ArgumentParser, flag: str, env: str, help: str, metavar: str | None = None
) -> None:
    """``flag``, defaulting to ``$env``: required only when that variable is unset."""
    default = os.environ.get(env)
    parser.add_argument(
        flag,
        required=default is None,
        default=default,
        metavar=metavar,
        help=f"{help} (default: ${env})",
    )


def add_bootstrap_server(
    parser: argparse.ArgumentParser, help: str = "bootstrap.servers", env: str | None = None
) -> None:
    """``--bootstrap-server HOST:PORT[,HOST:PORT]``; with ``env``, that variable is its default."""
    metavar = "HOST:PORT[,HOST:PORT]"
    if env is not None:
        add_env_default(parser, "--bootstrap-server", env, help, metavar)
    else:
        parser.add_argument("--bootstrap-server", required=True, metavar=metavar, help=help)


def add_command_config(parser: argparse.ArgumentParser, used_for: str) -> None:
    """``--command-config FILE``: Kafka client properties (TLS, SASL), as kafka-*.sh take."""
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help=f"Kafka client properties for {used_for}: {_COMMAND_CONFIG_KEYS} "
        "(as kafka-*.sh --command-config)",
    )


def add_output(parser: argparse.ArgumentParser) -> None:
    """``--output text|json``: text for people, one JSON document for scripts."""
    parser.add_argument(
        "--output", choices=("text", "json"), default="text", help="text tables or one JSON doc"
    )


def add_key_values(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """A repeatable ``flag KEY=VALUE`` (read it with :func:`parse_key_values`)."""
    parser.add_argument(flag, action="append", default=[], metavar="KEY=VALUE", help=help)


def parse_key_values(items: Iterable[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` items as a dict (blanks around each stripped; a later key wins)."""
    values: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        values[key.strip()] = value.strip()
    return values


def positive_seconds(text: str) -> float:
    """An argparse ``type``: a finite number of seconds above zero (``--timeout -1``, ``0``,
    ``nan`` or ``inf`` would only ever time out at once or never, so they are usage errors)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds above 0")
    return seconds
