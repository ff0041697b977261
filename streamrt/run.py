"""``streamrt run MODULE:APP``: run an application object with CLI overrides.

This command sits above the runtime: it loads the App, merges settings, and wires what the
runtime does not know — the REST endpoint (``streamrt.rest``, only when
``application.server`` is set, so a plain run does not import it) and the events publisher.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.app import App, AppError
from streamrt.runtime.config import load_config_file, read_env

__all__ = ("EXIT_APP_ERROR", "register")

# The instance ended in ERROR: every stream thread stopped because a record kept failing
# (exception handler ``fail``) or because of a fatal error such as a fenced instance id.
EXIT_APP_ERROR = 4


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a streamrt application (MODULE:ATTR, e.g. apps.wordcount:app)",
        description="Run an App. Settings: code < config file < STREAMRT_* env < flags.",
    )
    p.add_argument("target", help="MODULE:ATTR of an App object")
    p.add_argument("--instance-id", help="group.instance.id (static membership)")
    p.add_argument("--threads", type=int, help="num.stream.threads")
    p.add_argument("--bootstrap-server", help="bootstrap.servers")
    p.add_argument("--state-dir", help="state.dir")
    p.add_argument("--application-server", help="application.server (host:port)")
    p.add_argument("--config-file", help="a properties or JSON file of settings")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="any setting")
    p.add_argument(
        "--no-events-topic",
        action="store_true",
        help="log lifecycle events only, do not produce them to <application.id>-events",
    )
    p.set_defaults(func=_run)


def load_app(target: str) -> App:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    app = getattr(module, attr or "app", None)
    if not isinstance(app, App):
        raise ConfigError(f"{target} is not a streamrt App")
    return app


def _run(args: argparse.Namespace) -> int:
    app = load_app(args.target)
    settings: dict[str, Any] = {}
    if args.config_file:
        settings.update(load_config_file(args.config_file))
    settings.update(read_env())
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--config expects KEY=VALUE, got {item!r}")
        settings[key.strip()] = value.strip()
    settings.update(
        {
            "group.instance.id": args.instance_id,
            "num.stream.threads": args.threads,
            "bootstrap.servers": args.bootstrap_server,
            "state.dir": args.state_dir,
            "application.server": args.application_server,
        }
    )
    settings = {k: v for k, v in settings.items() if v is not None}
    known = {"log.level", "log.format"}
    app.configure({k: v for k, v in settings.items() if k not in known})
    if app.resolve_config().application_server is not None:
        from streamrt.rest.wiring import attach_rest

        attach_rest(app)
    from streamrt.events import install_event_publisher

    publisher = install_event_publisher(app, to_topic=not args.no_events_topic)
    try:
        return app.run()
    except AppError as exc:
        print(f"streamrt: error: the instance ended in ERROR: {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    finally:
        publisher.close()
