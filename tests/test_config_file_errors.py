"""A config file that cannot be read or parsed: one ``streamrt: error:`` line that names the
file, exit 1 (not a bare JSON or codec message that leaves the operator guessing which file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = str(Path(__file__).resolve().parents[1])


def streamrt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMRT_")}
    env["PYTHONPATH"] = CHECKOUT
    return subprocess.run(
        [sys.executable, "-m", "streamrt.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_names_the_file(proc: subprocess.CompletedProcess[str], path: Path, why: str) -> None:
    assert proc.returncode == 1, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"streamrt: error: {path}: "), lines[0]
    assert why in lines[0], lines[0]


BAD_FILES = {
    "bad.json": (b'{"num.stream.threads": 2,,}', "not valid JSON"),
    "latin1.properties": (b"sasl.jaas.config=caf\xe9\n", "not UTF-8"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_streamrt_run_names_a_config_file_that_does_not_parse(tmp_path: Path, name: str) -> None:
    content, why = BAD_FILES[name]
    (tmp_path / name).write_bytes(content)
    (tmp_path / "cfg_app.py").write_text(
        "from streamrt.runtime import App\napp = App({'application.id': 'cfg'})\n"
    )
    proc = streamrt(
        tmp_path, "run", "cfg_app:app", "--bootstrap-server", "127.0.0.1:1",
        "--config-file", str(tmp_path / name),
    )  # fmt: skip
    assert_names_the_file(proc, tmp_path / name, why)


def test_command_config_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_bytes(b"security.protocol=SASL_SSL\nsasl.jaas.config=caf\xe9\n")
    proc = streamrt(
        tmp_path, "groups", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "5",
        "--command-config", str(path),
    )  # fmt: skip
    assert_names_the_file(proc, path, "not UTF-8")
