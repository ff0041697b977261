"""Local instance processes: ``streamrt run`` children the deploy driver starts and stops.

The driver plays the orchestrator: SIGTERM (the runtime commits and exits without a
LeaveGroup when static), wait for exit, start again with the same instance id and state dir;
or, hand-off mode, start the new process with ``--handoff`` beside the old one and wait for
the old one to hand over and exit.

Another runtime (the benchmark's faust-streaming contender) runs through ``argv``: the driver
then passes what it would have put on the ``streamrt run`` command line in the environment,
``CONTENDER_BOOTSTRAP``, ``CONTENDER_INSTANCE_ID`` (absent: dynamic membership),
``CONTENDER_STATE_DIR`` and ``CONTENDER_CONFIG`` (the settings as a JSON object). Not
``STREAMRT_*``: the runtime reads those as its own settings.

Nothing waits on a dead child: every wait of the driver calls :func:`check_alive` (or
:func:`sleep_watching`), which raises :class:`~streamrt.errors.ChildExited` naming the
instance, its exit code and the last lines of its log as soon as one exited unasked.

Kafka client properties (TLS, SASL: ``--command-config``) never go on a command line, where
``ps`` shows them to every user: :func:`write_client_properties` writes them to a 0600 file
in the run's directory, passed as ``streamrt run --config-file`` (``CONTENDER_CLIENT_CONFIG``
holds its path for another runtime). Nor do secret settings (``rest.auth.token``,
``rest.directory.secret``, ``*.password``, ``sasl.jaas.config``: whatever
:func:`streamrt.client_config.is_sensitive` names): a ``streamrt run`` child gets them as
``STREAMRT_*`` variables (``/proc/<pid>/environ`` is readable by its owner only), everything
else as ``--config`` flags.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from streamrt.client_config import ClientConfig, is_sensitive
from streamrt.errors import ChildExited
from streamrt.runtime.env_config import ENV_PREFIX

__all__ = (
    "InstanceSpec",
    "LocalInstance",
    "check_alive",
    "secret_environment",
    "sleep_watching",
    "write_client_properties",
)

LOG_TAIL_LINES = 15


def check_alive(instances: Iterable[LocalInstance]) -> None:
    """Raise :class:`ChildExited` for the first started instance whose process has exited."""
    for instance in instances:
        instance.check_alive()


def sleep_watching(instances: Iterable[LocalInstance], seconds: float) -> None:
    """``time.sleep(seconds)``, but raise as soon as one of ``instances`` exits."""
    watched = list(instances)
    deadline = time.monotonic() + seconds
    while True:
        check_alive(watched)
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ("" when there is none yet)."""
    try:
        with path.open("rb") as f:
            f.seek(max(f.seek(0, os.SEEK_END) - 64 * 1024, 0))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def secret_environment(settings: dict[str, str]) -> dict[str, str]:
    """The secret settings as the ``STREAMRT_*`` variables ``streamrt run`` reads them from
    (``rest.auth.token`` → ``STREAMRT_REST_AUTH_TOKEN``)."""
    env: dict[str, str] = {}
    for key, value in settings.items():
        if not is_sensitive(key):
            continue
        if key != key.lower() or "_" in key:  # its variable would name another key
            raise ValueError(f"secret setting {key!r} cannot be passed in the environment")
        env[ENV_PREFIX + key.upper().replace(".", "_")] = value
    return env


def write_client_properties(path: Path, client: ClientConfig) -> Path:
    """The client properties as a JSON object only the owner can read (``--config-file``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode on open: narrow it
    with os.fdopen(fd, "w") as f:
        json.dump(client.properties(), f, indent=2, sort_keys=True)
    return path


@dataclass(frozen=True, slots=True)
class InstanceSpec:
    """How to run one instance. ``instance_id=None`` runs it with dynamic membership."""

    name: str
    target: str
    bootstrap: str
    state_dir: Path
    threads: int
    instance_id: str | None
    log_path: Path
    settings: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    argv: tuple[str, ...] = ()  # run this instead of ``streamrt run`` (settings in the env)
    env: dict[str, str] = field(default_factory=dict)  # extra environment, e.g. a start-up delay
    client_config_file: Path | None = None  # 0600 client properties (write_client_properties)
    application_server: str | None = None  # host:port of its REST endpoint (``streamrt run``)

    def command(self, handoff: bool = False) -> list[str]:
        if self.argv:
            if handoff:
                raise ValueError(f"{self.name}: only `streamrt run` instances can hand off")
            return list(self.argv)
        cmd = [sys.executable, "-m", "streamrt.cli", "--log-format", "json", "run", self.target]
        cmd += ["--threads", str(self.threads), "--bootstrap-server", self.bootstrap]
        cmd += ["--state-dir", str(self.state_dir)]
        if self.client_config_file is not None:
            cmd += ["--config-file", str(self.client_config_file)]
        if self.instance_id is not None:
            cmd += ["--instance-id", self.instance_id]
        if self.application_server is not None:
            cmd += ["--application-server", self.application_server]
        for key, value in sorted(self.settings.items()):
            if not is_sensitive(key):  # secrets go in the environment (``ps`` shows argv)
                cmd += ["--config", f"{key}={value}"]
        if handoff:
            cmd.append("--handoff")
        return cmd

    def environment(self) -> dict[str, str]:
        """Variables for an ``argv`` command (``streamrt run`` takes flags, and its secret
        settings as variables) + ``env``."""
        if not self.argv:
            return {**secret_environment(self.settings), **self.env}
        env = {
            "CONTENDER_BOOTSTRAP": self.bootstrap,
            "CONTENDER_STATE_DIR": str(self.state_dir),
            "CONTENDER_CONFIG": json.dumps(self.settings, sort_keys=True),
        }
        if self.instance_id is not None:
            env["CONTENDER_INSTANCE_ID"] = self.instance_id
        if self.client_config_file is not None:
            env["CONTENDER_CLIENT_CONFIG"] = str(self.client_config_file)
        return {**env, **self.env}


class LocalInstance:
    """One child process at a time for a spec; ``pid`` changes on every start."""

    def __init__(self, spec: InstanceSpec) -> None:
        self.spec = spec
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.stopped = False  # by stop(): its exit is no surprise until the next start

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check_alive(self) -> None:
        """Raise :class:`ChildExited` if the process was started and has exited on its own
        (not one never started, nor one :meth:`stop` stopped)."""
        if self.process is None or self.stopped or self.process.poll() is None:
            return
        raise self._exited(self.process.returncode)

    def _exited(self, code: int, what: str = "") -> ChildExited:
        path = self.spec.log_path
        return ChildExited(f"{self.spec.name}{what}", code, log_tail(path), str(path))

    def start(self) -> int:
        """Start the process (output appended to the spec's log); returns its pid."""
        if self.running:
            raise RuntimeError(f"{self.spec.name} is already running")
        self.process = self._spawn(handoff=False)
        self.stopped = False
        self.starts += 1
        return self.process.pid

    def handoff(self, timeout: float = 180.0) -> tuple[int | None, int]:
        """Start a successor with ``--handoff`` while this one runs; wait for the old process to
        hand over and exit. Returns (old exit code, new pid); raises if the successor gave up
        (refused, crashed) and the old process keeps running."""
        old = self.process
        if old is None or old.poll() is not None:
            raise RuntimeError(f"{self.spec.name} is not running: nothing to hand off from")
        new = self._spawn(handoff=True)
        deadline = time.monotonic() + timeout
        while old.poll() is None:
            if new.poll() is not None:
                what = f"'s successor (before taking over; pid {old.pid} keeps running)"
                raise self._exited(new.returncode, what)
            if time.monotonic() > deadline:
                new.kill()
                new.wait(10)
                raise TimeoutError(f"{self.spec.name}: no hand-off within {timeout:g}s")
            time.sleep(0.02)
        self.process = new
        self.starts += 1
        return old.returncode, new.pid

    def _spawn(self, handoff: bool) -> subprocess.Popen[bytes]:
        self.spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(self.spec.environment())
        cwd = self.spec.cwd or Path.cwd()
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(cwd), env.get("PYTHONPATH")) if p)
        with self.spec.log_path.open("ab") as log:
            return subprocess.Popen(
                self.spec.command(handoff), stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env
            )

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        """Send ``sig``, wait for exit (SIGKILL after ``timeout``); returns the exit code."""
        if self.process is None:
            return None
        self.stopped = True
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode
