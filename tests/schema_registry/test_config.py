"""Registry serde settings under Kafka's names (no registry needed)."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import (
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)

from streamrt.errors import ConfigError
from streamrt.schema_registry import AvroSerde, registry_settings, schema_id_of
from streamrt.serde import bind_serde, serde_for

URL = "http://127.0.0.1:1/apis/ccompat/v7"


def test_kafka_names_map_to_the_client_and_the_serializers() -> None:
    s = registry_settings(
        {
            "schema.registry.url": URL,
            "basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": "alice:secret",
            "schema.registry.ssl.ca.location": "/ca.pem",
            "auto.register.schemas": "false",
            "use.latest.version": True,
            "key.subject.name.strategy": "io.confluent.kafka.serializers.subject."
            + "RecordNameStrategy",
            "value.subject.name.strategy": "TopicRecordNameStrategy",
        }
    )
    assert s.client == {
        "url": URL,
        "basic.auth.user.info": "alice:secret",
        "ssl.ca.location": "/ca.pem",
    }
    conf = s.serializer_conf(is_key=False)
    assert conf["auto.register.schemas"] is False and conf["use.latest.version"] is True
    assert conf["subject.name.strategy"] is topic_record_subject_name_strategy
    assert s.serializer_conf(is_key=True)["subject.name.strategy"] is record_subject_name_strategy
    assert s.deserializer_conf(is_key=False) == {
        "subject.name.strategy": topic_record_subject_name_strategy,
        "use.latest.version": True,
    }


def test_default_strategy_is_topic_name_and_url_auth_adds_no_user_info() -> None:
    s = registry_settings(
        {"schema.registry.url": "http://u:p@h:1", "basic.auth.credentials.source": "URL"}
    )
    assert s.client == {"url": "http://u:p@h:1"}
    assert s.value_strategy is topic_subject_name_strategy


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "needs schema.registry.url"),
        ({"schema.registry.url": URL, "auto.register.schema": "true"}, "unknown registry"),
        ({"schema.registry.url": URL, "use.latest.version": "yes"}, "true or false"),
        ({"schema.registry.url": URL, "subject.name.strategy": "Nope"}, "TopicNameStrategy"),
        ({"schema.registry.url": URL, "basic.auth.credentials.source": "SASL_INHERIT"}, "URL"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(config: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        registry_settings(config)


def test_a_registry_serde_is_accepted_where_serdes_are_and_learns_its_topic() -> None:
    serde = AvroSerde({"schema.registry.url": URL}, '"string"')
    assert serde_for(serde) is serde  # no registry call at construction
    bound = bind_serde(serde, "clicks", is_key=True)
    assert (bound.topic, bound.is_key) == ("clicks", True)  # type: ignore[attr-defined]
    assert (serde.topic, serde.is_key) == (None, False)
    pinned = AvroSerde({"schema.registry.url": URL}, '"string"', topic="app-store-changelog")
    assert bind_serde(pinned, "clicks", is_key=False).topic == "app-store-changelog"  # type: ignore[attr-defined]
    assert bind_serde(serde_for("str"), "clicks", is_key=True).serialize("a") == b"a"


def test_schema_id_of_reads_the_confluent_header() -> None:
    assert schema_id_of(b"\x00\x00\x00\x01\x02payload") == 258
    assert schema_id_of(b'{"json": 1}') is None
    assert schema_id_of(b"\x00\x00") is None
