"""The keys that chose the stream threads' Kafka clients are gone: a config that still sets one
is refused at start, naming the key, whichever way it is given (docs/operations.md)."""

from __future__ import annotations

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import App
from streamrt.runtime.config import StreamsConfig

KEYS = ("stream.thread.membership", "stream.thread.consumer", "stream.thread.producer")


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("value", ["aiokafka", "librdkafka", "streamrt"])
def test_a_removed_key_is_refused_by_name(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"^{key} no longer exists: librdkafka"):
        StreamsConfig.from_mapping({"application.id": "app", key: value})


@pytest.mark.parametrize("key", KEYS)
def test_a_removed_key_is_refused_as_a_python_field_or_an_underscored_key(key: str) -> None:
    field = key.replace(".", "_")
    with pytest.raises(ConfigError, match=f"^{key} no longer exists"):
        StreamsConfig(application_id="app", **{field: "librdkafka"})
    with pytest.raises(ConfigError, match=f"^{field} no longer exists"):
        StreamsConfig.from_mapping({"application.id": "app", field: "librdkafka"})


def test_a_removed_key_in_the_environment_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMRT_STREAM_THREAD_PRODUCER", "aiokafka")
    app = App({"application.id": "app"})
    app.stream("in").to("out")
    with pytest.raises(ConfigError, match=r"^stream\.thread\.producer no longer exists"):
        app.resolve_config()


def test_the_settings_no_longer_list_them() -> None:
    shown = StreamsConfig.from_mapping({"application.id": "app"}).redacted()
    assert not set(KEYS) & set(shown)
