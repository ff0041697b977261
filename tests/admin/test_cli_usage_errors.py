"""``streamrt groups``/``topics`` given options that cannot work: a usage error (exit 2) or one
clear ``streamrt: error:`` line, before any connection attempt that would only time out."""

from __future__ import annotations

import subprocess
import sys

import pytest


def streamrt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamrt.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("timeout", ["-1", "0", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(timeout: str) -> None:
    proc = streamrt("groups", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", timeout)
    assert proc.returncode == 2, proc
    assert "--timeout" in proc.stderr and "timed out" not in proc.stderr


@pytest.mark.parametrize("server", ["127.0.0.1:99999", "127.0.0.1:0", ":9092"])
def test_a_bootstrap_server_out_of_range_is_named_in_the_error(server: str) -> None:
    proc = streamrt("topics", "list", "--bootstrap-server", server, "--timeout", "5")
    assert proc.returncode == 1, proc
    assert proc.stderr.strip() == f"streamrt: error: bootstrap server {server!r} is not host:port"
