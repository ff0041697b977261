"""Serdes, config validation and loading, and the ``run`` CLI's refusal of bad config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime.config import StreamsConfig, load_config_file
from streamrt.runtime.dsl import SessionWindowedSerde, TimeWindowedSerde
from streamrt.runtime.env_config import read_env
from streamrt.runtime.processor import Windowed
from streamrt.serde import IntSerde, serde_for


@pytest.mark.parametrize(
    ("name", "value"),
    [("bytes", b"\x00x"), ("str", "héllo"), ("int", -(2**40)), ("json", {"a": [1, None]})],
)
def test_serdes_round_trip_and_keep_tombstones(name: str, value: object) -> None:
    serde = serde_for(name)
    assert serde.deserialize(serde.serialize(value)) == value
    assert serde.serialize(None) is None
    assert serde.deserialize(None) is None


def test_int_serde_matches_kafkas_long_serializer() -> None:
    assert IntSerde().serialize(1) == b"\x00" * 7 + b"\x01"


def test_faust_record_serde() -> None:
    import faust

    class Click(faust.Record, serializer="json"):
        user: str
        page: str

    serde = serde_for(Click)
    data = serde.serialize(Click(user="u", page="/"))
    assert serde.deserialize(data) == Click(user="u", page="/")


def test_windowed_serdes_round_trip() -> None:
    key = Windowed("k", 10, 20)
    for serde in (TimeWindowedSerde(serde_for("str"), 10), SessionWindowedSerde(serde_for("str"))):
        assert serde.deserialize(serde.serialize(key)) == key


def test_unknown_serde_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown serde 'avro'"):
        serde_for("avro")


def test_config_uses_kafka_names_and_coerces() -> None:
    cfg = StreamsConfig.from_mapping(
        {"application.id": "a", "num.stream.threads": "3", "group.instance.id": "web-1"}
    )
    assert (cfg.num_stream_threads, cfg.group_instance_id, cfg.state_dir) == (3, "web-1", "state")


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({}, "application.id"),
        ({"application.id": "a", "num.stream.threads": "x"}, "num.stream.threads"),
        ({"application.id": "a", "num.stream.threads": "0"}, "num.stream.threads"),
        ({"application.id": "a", "processing.guarantee": "exactly_once"}, "processing.guarantee"),
        ({"application.id": "a", "application.server": "nohost"}, "application.server"),
        ({"application.id": "a", "application.server": "h:99999"}, "application.server"),
        ({"application.id": "a", "application.server": "h:0"}, "application.server"),
        ({"application.id": "a", "bootstrap.servers": "h:65536"}, "bootstrap.servers"),
        ({"application.id": "a", "bogus.key": "1"}, "bogus.key"),
        (
            {"application.id": "a", "default.deserialization.exception.handler": "x"},
            "default.deserialization.exception.handler",
        ),
    ],
)
def test_bad_config_names_the_key(settings: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        StreamsConfig.from_mapping(settings)


def test_env_and_files(tmp_path: Path) -> None:
    assert read_env({"STREAMRT_APPLICATION_ID": "x", "OTHER": "y"}) == {"application.id": "x"}
    props = tmp_path / "app.properties"
    props.write_text("# comment\napplication.id = wc\nnum.stream.threads=2\n")
    assert load_config_file(props) == {"application.id": "wc", "num.stream.threads": "2"}
    js = tmp_path / "app.json"
    js.write_text('{"application.id": "wc"}')
    assert load_config_file(js) == {"application.id": "wc"}


def test_cli_refuses_bad_config_with_the_key_named() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "streamrt.cli",
            "run",
            "apps.wordcount:app",
            "--threads",
            "0",
            "--bootstrap-server",
            "127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "num.stream.threads" in proc.stderr
