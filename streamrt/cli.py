"""The one ``streamrt`` command. Each layer registers its own subcommands.

A subcommand module exposes ``register(subparsers)``, which adds parsers whose ``func``
default is ``func(args) -> int`` (the exit code). Exit codes: 0 ok, 1 failure, 2 bad usage,
3 partial failure (e.g. some members of a batch removal were unknown), 4 ``streamrt run``: the
instance ended in ERROR (a record kept failing, or a fatal error; see docs/operations.md).
A tool whose child process died under it (``streamrt demo``, ``streamrt deploy``) exits with
that child's code (128+N for signal N), after its name and last log lines.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

__all__ = ("main",)

# Modules that contribute subcommands, in the order --help lists them, with the commands each
# registers. Only the module of the command being run is imported: ``streamrt run`` is what an
# orchestrator restarts in a rolling deploy, and importing the broker, Spark and the REST
# server it does not use would add most of a second to every restart.
_SUBCOMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "streamrt.demo": ("demo",),
    "streamrt.broker.cli": ("broker",),
    "streamrt.admin.cli": ("groups", "topics"),
    "streamrt.admin.access_cli": ("acls", "users"),
    "streamrt.run": ("run",),
    "streamrt.rest.cli": ("instances",),
    "streamrt.rest.console_cli": ("console",),
    "streamrt.deploy.cli": ("deploy",),
    "streamrt.spark.cli": ("report",),
    "streamrt.dev.cli": ("dev",),
}
_GLOBAL_OPTIONS_WITH_VALUE = ("--log-level", "--log-format")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _requested_command(argv: Sequence[str]) -> str | None:
    """The first positional argument (the subcommand), skipping the global options."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _GLOBAL_OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given ``argv`` naming a known command, only that command's module."""
    parser = argparse.ArgumentParser(
        prog="streamrt",
        description=(
            "streamrt: a Kafka Streams-style runtime for Python with zero-shuffle rolling "
            "deploys (static membership, KIP-345), and an embedded Kafka-protocol broker."
        ),
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=_LOG_LEVELS,
        default="INFO",
        metavar="LEVEL",
        help="DEBUG, INFO, WARNING or ERROR, any case (default INFO)",
    )
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="log line format"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    command = _requested_command(argv) if argv is not None else None
    modules = [m for m, commands in _SUBCOMMAND_MODULES.items() if command in commands]
    for name in modules or _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):  # that layer is not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # MODULE:ATTR targets (``streamrt run apps.wordcount:app``) resolve from the working
    # directory, as with ``python -m`` and uvicorn; a console script alone would not look there.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from streamrt.errors import ChildExited
    from streamrt.logs import configure_logging

    configure_logging(args.log_level, args.log_format)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except ChildExited as exc:  # a tool's child died: its code, not a generic failure
        print(f"streamrt: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except Exception as exc:  # a clean message for scripts, the traceback at DEBUG
        logging.getLogger("streamrt").debug("command failed", exc_info=True)
        print(f"streamrt: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
