"""Every registry serde against confluent-kafka's own serializers, through a real registry.

What streamrt writes, confluent-kafka's deserializer reads, and the reverse; a breaking schema
is refused by the registry's compatibility check; after the first record the hot path asks
the registry nothing (its access log counts the requests).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from streamrt.dev.apicurio import ApicurioRegistry
from streamrt.schema_registry import (
    AvroSerde,
    JsonSchemaSerde,
    ProtobufSerde,
    SchemaSerializationError,
    schema_id_of,
)
from streamrt.serde import bind_serde
from tests.schema_registry.protos import Click

AVRO = json.dumps(
    {
        "type": "record",
        "name": "Click",
        "namespace": "streamrt.test",
        "fields": [{"name": "user", "type": "string"}, {"name": "n", "type": "long"}],
    }
)
JSON_SCHEMA = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Click",
        "type": "object",
        "properties": {"user": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["user", "n"],
    }
)


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _theirs(kind: str, client: SchemaRegistryClient) -> tuple[Any, Any]:
    if kind == "avro":
        return AvroSerializer(client, AVRO), AvroDeserializer(client)
    if kind == "json":
        return JSONSerializer(JSON_SCHEMA, client), JSONDeserializer(JSON_SCHEMA)
    conf = {"use.deprecated.format": False}
    return ProtobufSerializer(Click, client, conf), ProtobufDeserializer(Click, conf)


def _ours(kind: str, config: dict[str, Any], topic: str) -> Any:
    serde: Any
    if kind == "avro":
        serde = AvroSerde(config, AVRO)
    elif kind == "json":
        serde = JsonSchemaSerde(config, JSON_SCHEMA)
    else:
        serde = ProtobufSerde(config, Click)
    return bind_serde(serde, topic, is_key=False)


def _value(kind: str, user: str, n: int) -> Any:
    return Click(user=user, n=n) if kind == "protobuf" else {"user": user, "n": n}


@pytest.mark.parametrize("kind", ["avro", "json", "protobuf"])
def test_round_trips_both_ways_with_confluent_kafkas_serializers(
    kind: str, serde_config: dict[str, Any], subject_topic: str, registry: ApicurioRegistry
) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    their_ser, their_de = _theirs(kind, client)
    ours = _ours(kind, serde_config, subject_topic)

    written_by_them = their_ser(_value(kind, "a", 1), _ctx(subject_topic))
    assert ours.deserialize(written_by_them) == _value(kind, "a", 1)
    written_by_us = ours.serialize(_value(kind, "b", 2))
    assert written_by_us[0] == 0 and schema_id_of(written_by_us) == schema_id_of(written_by_them)
    assert their_de(written_by_us, _ctx(subject_topic)) == _value(kind, "b", 2)
    assert ours.serialize(None) is None and ours.deserialize(None) is None

    before = registry.requests_served()
    for n in range(200):  # the hot path: ids and schemas come from the cache
        assert ours.deserialize(ours.serialize(_value(kind, "c", n))) == _value(kind, "c", n)
    assert registry.requests_served() == before


def test_a_breaking_schema_is_refused_by_the_registry(
    serde_config: dict[str, Any], subject_topic: str
) -> None:
    v1 = AvroSerde(serde_config, AVRO, topic=subject_topic)
    assert v1.deserialize(v1.serialize({"user": "a", "n": 1})) == {"user": "a", "n": 1}
    breaking = json.loads(AVRO)
    breaking["fields"][1]["type"] = "string"  # long -> string: not BACKWARD compatible
    v2 = AvroSerde(serde_config, json.dumps(breaking), topic=subject_topic)
    with pytest.raises(SchemaSerializationError, match=rf"{subject_topic}.*409"):
        v2.serialize({"user": "a", "n": "one"})
    compatible = json.loads(AVRO)
    compatible["fields"].append({"name": "page", "type": "string", "default": ""})
    v3 = AvroSerde(serde_config, json.dumps(compatible), topic=subject_topic)
    assert v1.deserialize(v3.serialize({"user": "a", "n": 2, "page": "/"})) == {
        "user": "a",
        "n": 2,
    }  # an old reader still reads the evolved writer: BACKWARD
