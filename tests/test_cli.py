"""The one ``streamrt`` command: subcommands, help, and what ``streamrt run`` imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamrt.cli import _requested_command, build_parser, main


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    for command in ("demo", "broker", "groups", "topics", "run", "instances", "deploy", "report"):
        assert f"    {command} " in out


def test_the_requested_command_skips_global_options() -> None:
    assert _requested_command(["--log-level", "DEBUG", "--log-format", "json", "run", "x"]) == "run"
    assert _requested_command(["--log-format=json", "groups", "list"]) == "groups"
    assert _requested_command(["-h"]) is None


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser(["nosuch"]).parse_args(["nosuch"])
    assert exc.value.code == 2
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err


def test_streamrt_run_imports_neither_the_broker_nor_spark_nor_the_deploy_driver() -> None:
    """A rolling deploy restarts ``streamrt run``: every import there is downtime."""
    code = (
        "import sys; from streamrt.cli import build_parser; "
        "build_parser(['--log-format', 'json', 'run', 'apps.wordcount:app']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow') "
        "or m.startswith(('streamrt.broker', 'streamrt.spark', 'streamrt.deploy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_streamrt_run_finds_app_modules_in_the_working_directory(tmp_path: Path) -> None:
    """The console script, run from a checkout, imports ``apps.x:app`` from there (``apps``
    is example code, not installed)."""
    (tmp_path / "here_app.py").write_text("app = 42\n")
    script = Path(sys.executable).with_name("streamrt")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])  # this checkout's streamrt
    proc = subprocess.run(
        [str(script), "run", "here_app:app", "--bootstrap-server", "127.0.0.1:1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "here_app:app is not a streamrt App" in proc.stderr


@pytest.mark.parametrize("level", ["bogus", "7"])
def test_an_unknown_log_level_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], level: str
) -> None:
    argv = ["--log-level", level, "groups", "list", "--bootstrap-server", "127.0.0.1:1"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--log-level" in err and "Traceback" not in err


def test_a_log_level_in_lower_case_is_still_accepted() -> None:
    argv = ["--log-level", "debug", "groups", "list", "--bootstrap-server", "127.0.0.1:1"]
    assert build_parser(argv).parse_args(argv).log_level == "DEBUG"
