"""The options several commands share (``streamrt/cli_options.py``), as a user meets them."""

from __future__ import annotations

import pytest

from streamrt.cli import main


def test_deploy_rolling_names_a_config_without_a_value_before_starting_anything(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    argv = ["deploy", "rolling", "tests.runtime.counting_app:app", "--application-id", "c"]
    argv += ["--bootstrap-server", "127.0.0.1:1", "--state-dir", str(tmp_path)]
    argv += ["--config", "session.timeout.ms"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "--config expects KEY=VALUE, got 'session.timeout.ms'" in err
    assert not (tmp_path / "logs").exists()  # no instance was started


def test_every_key_value_flag_refuses_an_empty_key_naming_itself(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from streamrt.broker.cli import parse_config
    from streamrt.broker.cli import register as register_broker
    from streamrt.errors import ConfigError

    parser = argparse.ArgumentParser()
    register_broker(parser.add_subparsers())
    args = parser.parse_args(["broker", "--override", "=8"])
    with pytest.raises(ConfigError, match="--override expects KEY=VALUE, got '=8'"):
        parse_config(args)
