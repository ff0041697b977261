"""``STREAMRT_*`` variables (issue 42): only settings are read, anything else is warned once."""

from __future__ import annotations

import logging

import pytest

from streamrt.runtime.env_config import read_env


def test_unknown_variables_are_warned_once_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    env = {
        "STREAMRT_APPLICATION_ID": "wc",
        "STREAMRT_SASL_JAAS_CONFIG": "jaas",  # a client setting
        "STREAMRT_CACHE_DIR": "/tmp/c",  # streamrt's own tools: silently not a setting
        "STREAMRT_MY_TOOLING_FLAG": "1",
        "STREAMRT_REST_AUTH_TOKEN": "t",  # a REST key: only where the caller accepts it
        "HOME": "/root",
    }
    with caplog.at_level(logging.WARNING, logger="streamrt.runtime.env_config"):
        first = read_env(env)
        second = read_env(env, also={"rest.auth.token"})
    assert first == {"application.id": "wc", "sasl.jaas.config": "jaas"}
    assert second == {**first, "rest.auth.token": "t"}
    warned = [r.getMessage() for r in caplog.records]
    assert sum("STREAMRT_MY_TOOLING_FLAG" in m for m in warned) == 1
    assert sum("STREAMRT_REST_AUTH_TOKEN" in m for m in warned) == 1
    assert not any("STREAMRT_CACHE_DIR" in m for m in warned)


def test_no_warning_when_asked_not_to(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="streamrt.runtime.env_config"):
        assert read_env({"STREAMRT_QUIET_UNKNOWN": "1"}, warn=False) == {}
    assert caplog.records == []
