"""``streamrt dev registry``: the CLI starts Apicurio Registry, prints its URL, stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from streamrt.dev.apicurio import ApicurioRegistry


def test_dev_registry_serves_confluents_api_until_sigterm(
    tmp_path: Path, registry: ApicurioRegistry
) -> None:
    # the session fixture already proved a registry can be had here (else this skips)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamrt.cli", "dev", "registry", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        assert lines[0].startswith("Apicurio Registry 3.0.9 ready"), lines
        url = lines[1].strip().removeprefix("schema.registry.url=")
        assert url.endswith("/apis/ccompat/v7")
        assert httpx.get(f"{url}/config", timeout=10).json() == {"compatibilityLevel": "BACKWARD"}
        proc.send_signal(signal.SIGTERM)
        out, _err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "stopped" in out
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/subjects", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
