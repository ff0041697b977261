"""A broker subprocess for benchmarks: `streamrt broker` on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import sys


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_broker(
    data_dir: str,
    port: int,
    *overrides: str,
    metrics_port: int | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start the broker and return once it listens; ``overrides`` are ``key=value`` configs."""
    args = [sys.executable, "-m", "streamrt.cli", "--log-level", "WARNING", "broker"]
    args += ["--port", str(port), "--data-dir", data_dir]
    if metrics_port is not None:
        args += ["--metrics-port", str(metrics_port)]
    for item in overrides:
        args += ["--override", item]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdout is not None
    proc.stdout.readline()
    return proc
