"""``streamrt broker`` as a child process: for tests of start-up, process limits and signals."""

from __future__ import annotations

import resource
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _limit_files(nofile: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    return apply


def start(
    data_dir: Path,
    port: int,
    *,
    nofile: int | None = None,
    overrides: tuple[str, ...] = (),
    stderr: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start a broker (``ulimit -n nofile`` if given); returns once it listens."""
    args = [sys.executable, "-m", "streamrt.cli", "broker", "--port", str(port)]
    args += ["--data-dir", str(data_dir)]
    for item in overrides:
        args += ["--override", item]
    err = open(stderr, "ab") if stderr is not None else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=err,
        preexec_fn=_limit_files(nofile) if nofile is not None else None,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if "listening" not in line:
        proc.kill()
        proc.wait(30)
        detail = stderr.read_text()[-2000:] if stderr is not None else ""
        raise AssertionError(f"broker did not start: {line!r} {detail}")
    return proc


def run_until_exit(
    data_dir: Path, port: int, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a broker expected to fail at start-up; its exit code and output."""
    args = [sys.executable, "-m", "streamrt.cli", "broker", "--port", str(port)]
    args += ["--data-dir", str(data_dir)]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def terminate(proc: subprocess.Popen[bytes], timeout: float = 120) -> int:
    """SIGTERM and the exit code."""
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)
