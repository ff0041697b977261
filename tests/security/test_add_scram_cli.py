"""``streamrt broker --add-scram`` keeps the admin password out of the broker's command line:
it comes from a file or an environment variable; an inline ``password=`` is refused."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamrt.admin.connection import BrokerConnection
from streamrt.admin.security import AdminSecurity
from streamrt.client_config import SaslCredentials

SECRET = "s3cret-never-in-argv"
ROOT = Path(__file__).resolve().parents[2]


def _broker(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streamrt.cli", "broker", "--data-dir", str(tmp_path / "data")]
    cmd += ["--port", "0", "--listener", "SASL_PLAINTEXT://127.0.0.1:0", *args]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env
    )


def _sasl_address(proc: subprocess.Popen) -> str:
    assert proc.stdout is not None
    for _ in range(10):
        line = proc.stdout.readline()
        if "listener SASL_PLAINTEXT:" in line:
            return line.split(":", 1)[1].strip()
    raise AssertionError("the broker did not print its SASL listener")


def _login(address: str, password: str) -> None:
    async def run() -> None:
        host, port = address.rsplit(":", 1)
        creds = SaslCredentials("SCRAM-SHA-256", "admin", password)
        conn = await BrokerConnection.open(host, int(port), security=AdminSecurity(sasl=creds))
        await conn.close()

    asyncio.run(run())


@pytest.mark.parametrize("source", ["password-env", "password-file", "add-scram-file"])
def test_password_from_env_or_file_not_in_argv(tmp_path: Path, source: str) -> None:
    secret_file = tmp_path / "admin.secret"
    if source == "add-scram-file":
        secret_file.write_text(f"# admin\nSCRAM-SHA-256=[name=admin,password={SECRET}]\n")
        args = ["--add-scram-file", str(secret_file)]
    elif source == "password-file":
        secret_file.write_text(SECRET + "\n")
        args = ["--add-scram", f"SCRAM-SHA-256=[name=admin,password-file={secret_file}]"]
    else:
        args = ["--add-scram", "SCRAM-SHA-256=[name=admin,password-env=ADMIN_PW]"]
    proc = _broker(tmp_path, *args, env={"ADMIN_PW": SECRET})
    try:
        address = _sasl_address(proc)
        argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert SECRET not in argv
        _login(address, SECRET)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_inline_password_refused(tmp_path: Path) -> None:
    proc = _broker(tmp_path, "--add-scram", f"SCRAM-SHA-256=[name=admin,password={SECRET}]")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "password-file" in err and "ps" in err
    assert not (tmp_path / "data" / "security" / "scram-credentials.json").exists()
