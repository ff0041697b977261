"""``streamrt run MODULE:APP``: run an application object with CLI overrides.

This command sits above the runtime: it loads the App, merges settings, and wires what the
runtime does not know — the REST endpoint (``streamrt.rest``, only when
``application.server`` is set, so a plain run does not import it) and the events publisher.

It also serves the instance's hand-off socket (:mod:`streamrt.runtime.instance.handoff`, static
members only): ``--handoff`` starts a successor that does its slow start-up, then takes over
from the running process of the same instance; ``SIGHUP`` makes the running process start such
a successor from the current code with its own command line, as gunicorn reloads.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamrt.errors import ConfigError
from streamrt.logs import fields
from streamrt.rest.settings import ENV_KEYS, RestSettings
from streamrt.runtime.config import StreamsConfig, load_config_file
from streamrt.runtime.env_config import read_env
from streamrt.runtime.instance.app import App, AppError
from streamrt.runtime.instance.handoff import (
    HandoffBusyError,
    HandoffError,
    HandoffInterruptedError,
    HandoffRefusedError,
    HandoffServer,
    NoRunningInstanceError,
    SuccessorLock,
    prepare,
    request_handoff,
    socket_path,
    topology_fingerprint,
)
from streamrt.runtime.instance.metadata import AppState
from streamrt.runtime.instance.process_thread import PROCESS_MODE
from streamrt.runtime.instance.signals import on_stop_signals

__all__ = ("EXIT_APP_ERROR", "register", "run_settings")

# The instance ended in ERROR: every stream thread stopped because a record kept failing
# (exception handler ``fail``) or because of a fatal error such as a fenced instance id.
EXIT_APP_ERROR = 4

logger = logging.getLogger(__name__)

_STOPPED = (AppState.PENDING_SHUTDOWN, AppState.PENDING_ERROR, AppState.NOT_RUNNING, AppState.ERROR)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a streamrt application (MODULE:ATTR, e.g. streamrt.examples.wordcount:app)",
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
    p.add_argument(
        "--handoff",
        action="store_true",
        help="take over from the running process of this instance (same --instance-id and "
        "--state-dir) after starting up, instead of waiting for it to exit; without one, "
        "start normally",
    )
    p.add_argument(
        "--handoff-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for the running process to release its state (default 120)",
    )
    p.set_defaults(func=_run)


def load_app(target: str) -> App:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    app = getattr(module, attr or "app", None)
    if not isinstance(app, App):
        raise ConfigError(f"{target} is not a streamrt App")
    return app


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings ``streamrt run`` gives the app: config file < ``STREAMRT_*`` env <
    ``--config`` < flags (the Kubernetes manifests' test reads them the same way)."""
    settings: dict[str, Any] = {}
    if args.config_file:
        settings.update(load_config_file(args.config_file))
    settings.update(read_env(also=ENV_KEYS))
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--config expects KEY=VALUE, got {item!r}")
        settings[key.strip()] = value.strip()
    flags = {
        "group.instance.id": args.instance_id,
        "num.stream.threads": args.threads,
        "bootstrap.servers": args.bootstrap_server,
        "state.dir": args.state_dir,
        "application.server": args.application_server,
    }
    # a flag given wins over --config; a flag not given leaves --config's value alone
    settings.update({k: v for k, v in flags.items() if v is not None})
    return settings


def _run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    if threading.current_thread() is threading.main_thread():
        # until we serve: a SIGHUP must not kill a starting process (its default action)
        signal.signal(signal.SIGHUP, lambda *_: logger.warning("SIGHUP ignored: still starting"))
    app = load_app(args.target)
    app.app_spec = args.target  # stream.thread.mode=process: each child imports the same app
    settings = run_settings(args)
    known = {"log.level", "log.format"}
    app.configure({k: v for k, v in settings.items() if k not in known})
    config = app.resolve_config()
    from streamrt.events import install_event_publisher

    # signed with the key the console checks them with (the host directory's)
    mac_key = RestSettings.from_mapping(app.settings).host_directory_key
    publisher = install_event_publisher(app, to_topic=not args.no_events_topic, mac_key=mac_key)
    successor_lock: SuccessorLock | None = None
    try:
        if args.handoff:
            outcome = _take_over(app, config, args, began)
            if isinstance(outcome, int):
                return outcome
            successor_lock = outcome
        if config.application_server is not None:
            from streamrt.rest.wiring import attach_rest

            attach_rest(app)
        return _serve(app, config, successor_lock)
    except AppError as exc:
        print(f"streamrt: error: the instance ended in ERROR: {exc}", file=sys.stderr)
        return EXIT_APP_ERROR
    finally:
        publisher.close()


def _take_over(
    app: App, config: StreamsConfig, args: argparse.Namespace, began: float
) -> SuccessorLock | int:
    """The successor's side: lock, slow start-up, ask the running process to hand over.

    Returns the successor lock to release once we serve the socket ourselves, or an exit code.
    """
    if config.group_instance_id is None:
        print("streamrt: error: --handoff needs static membership (--instance-id)", file=sys.stderr)
        return 2
    if config.stream_thread_mode == PROCESS_MODE:
        print(
            "streamrt: error: --handoff is not supported with stream.thread.mode=process "
            "(restart instead: static membership keeps the partitions)",
            file=sys.stderr,
        )
        return 2
    lock = SuccessorLock(config.app_state_dir)
    try:
        lock.acquire()
    except HandoffBusyError as exc:
        print(f"streamrt: error: {exc}", file=sys.stderr)
        return 1
    path = socket_path(config.app_state_dir)
    try:  # best effort: the running one writes its stores' memory to disk meanwhile
        prepare(path)
    except (HandoffError, OSError, ValueError) as exc:
        logger.info(
            "hand-off: could not prepare the running instance", extra=fields(error=str(exc))
        )
    # All the slow part while the old one still processes: connect, validate, create internal
    # topics, start the stream threads' clients and find the group coordinator.
    app.prestart()
    code = _ask_running(app, config, path, args.handoff_timeout, began, lock)
    return lock if code is None else code


def _ask_running(
    app: App,
    config: StreamsConfig,
    path: Path,
    timeout: float,
    began: float,
    lock: SuccessorLock,
) -> int | None:
    """Ask the running process to hand over; None when we go on (took over, or fall back to
    an ordinary start), an exit code when we must not start."""
    assert config.group_instance_id is not None  # checked by _take_over
    ready = time.monotonic()
    app.mark("handoff_requested")
    try:
        answer = request_handoff(
            path,
            instance_id=config.group_instance_id,
            fingerprint=topology_fingerprint(app.topology, config.application_id),
            release_timeout=timeout,
        )
    except NoRunningInstanceError as exc:
        logger.info(
            "hand-off: no running instance to take over, ordinary start",
            extra=fields(reason=str(exc)),
        )
    except HandoffRefusedError as exc:
        app.stop()  # the threads waiting to join: close their clients
        lock.release()
        logger.error("hand-off refused", extra=fields(reason=exc.reason, error=str(exc)))
        print(f"streamrt: error: hand-off refused: {exc}", file=sys.stderr)
        return 1
    except HandoffInterruptedError as exc:
        logger.warning(
            "hand-off interrupted: falling back to an ordinary start (restores the tail)",
            extra=fields(error=str(exc), old_pid=exc.old_pid),
        )
        _wait_gone(exc.old_pid, timeout=30.0)
    except (HandoffError, OSError, ValueError) as exc:
        logger.warning(
            "hand-off failed: falling back to an ordinary start", extra=fields(error=repr(exc))
        )
    else:
        app.mark("took_over")
        app.took_over(answer.get("summary", {}).get("thread_tasks", {}))
        logger.info(
            "hand-off: took over",
            extra=fields(
                old_pid=answer.get("pid"),
                startup_s=round(ready - began, 3),
                released_after_s=round(time.monotonic() - ready, 3),
                **answer.get("summary", {}),
            ),
        )
    return None


def _wait_gone(pid: int | None, timeout: float) -> None:
    """Wait for a process that let us down to exit (it may still be closing its stores)."""
    deadline = time.monotonic() + timeout
    while pid is not None and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        time.sleep(0.05)


def _serve(app: App, config: StreamsConfig, successor_lock: SuccessorLock | None) -> int:
    """Start, serve the hand-off socket, block until a signal, a hand-off or a fatal error."""
    done = threading.Event()
    handed_off: list[bool] = []
    server: HandoffServer | None = None
    with on_stop_signals(done.set) as main:
        try:
            app.start()
            server = _serve_handoff(app, config, lambda ok: _finish(handed_off, ok, done), main)
            if successor_lock is not None:
                successor_lock.release()
            while not done.wait(0.2):
                if app.state in _STOPPED:
                    break
            if handed_off:
                # The successor has the stores; let our threads finish closing their clients.
                app.stop()
                logger.info("handed off: exiting without leaving the group")
                return 0 if handed_off[0] else 1
            if server is not None:
                server.close()
            app.stop()
        finally:
            if server is not None:
                server.close()
    if app.fatal_error is not None:
        raise AppError(str(app.fatal_error))
    return 0


def _serve_handoff(
    app: App, config: StreamsConfig, on_done: Callable[[bool], None], main: bool
) -> HandoffServer | None:
    """Serve the hand-off socket (static members, thread mode); then SIGHUP reloads."""
    if config.group_instance_id is None or config.stream_thread_mode == PROCESS_MODE:
        return None
    server = HandoffServer(
        socket_path(config.app_state_dir),
        instance_id=config.group_instance_id,
        fingerprint=topology_fingerprint(app.topology, config.application_id),
        release=app.stop_for_handoff,
        prepare=app.prepare_for_handoff,
        on_done=on_done,
        state=lambda: app.state.name,
    )
    try:
        server.start()
    except (HandoffError, OSError) as exc:
        logger.warning("hand-off socket not served", extra=fields(error=str(exc)))
        return None
    if main:
        reloader = _Reloader()
        signal.signal(signal.SIGHUP, lambda *_: reloader.reload())
    return server


def _finish(handed_off: list[bool], ok: bool, done: threading.Event) -> None:
    handed_off.append(ok)
    done.set()


class _Reloader:
    """SIGHUP: start a successor from the current code with this process's own command line.

    The successor runs with ``--handoff``; if it dies before taking over, this process logs it
    and keeps running (a successor that takes over makes this process exit).
    """

    def __init__(self) -> None:
        self.child: subprocess.Popen[bytes] | None = None

    def reload(self) -> None:
        if self.child is not None and self.child.poll() is None:
            logger.warning("reload already in progress", extra=fields(successor=self.child.pid))
            return
        argv = [sys.executable, *sys.orig_argv[1:]]
        if "--handoff" not in argv:
            argv.append("--handoff")
        self.child = subprocess.Popen(argv, cwd=os.getcwd())
        logger.info("reload: started a successor", extra=fields(successor=self.child.pid))
        threading.Thread(target=self._watch, args=(self.child,), daemon=True).start()

    @staticmethod
    def _watch(child: subprocess.Popen[bytes]) -> None:
        code = child.wait()
        logger.error(
            "reload: the successor exited before taking over; this instance keeps running",
            extra=fields(successor=child.pid, exit_code=code),
        )
