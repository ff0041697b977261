"""RestSettings: streamrt's rest.* keys next to Kafka Streams' config."""

from __future__ import annotations

import pytest

from streamrt.errors import ConfigError
from streamrt.rest.settings import RestSettings


def test_token_from_config_then_env() -> None:
    assert RestSettings.from_mapping({"rest.auth.token": "a"}, {}).auth_token == "a"
    env = {"STREAMRT_REST_TOKEN": "b"}
    assert RestSettings.from_mapping({}, env).auth_token == "b"
    assert RestSettings.from_mapping({"rest.auth.token": "a"}, env).auth_token == "a"
    # ``streamrt run`` turns STREAMRT_REST_TOKEN into rest.token
    assert RestSettings.from_mapping({"rest.token": "c"}, {}).auth_token == "c"
    assert RestSettings.from_mapping({"application.id": "x"}, {}).auth_token is None


def test_bind_address_default_and_bad_keys() -> None:
    assert RestSettings.from_mapping({}, {}).bind_address == "127.0.0.1"
    assert RestSettings.from_mapping({"rest.bind.address": "0.0.0.0"}, {}).bind_address == (
        "0.0.0.0"
    )
    with pytest.raises(ConfigError, match=r"rest\.auth\.tokn"):
        RestSettings.from_mapping({"rest.auth.tokn": "x"}, {})
    with pytest.raises(ConfigError, match="forward"):
        RestSettings.from_mapping({"rest.forward.timeout.ms": "soon"}, {})
