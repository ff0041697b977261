"""Avro, Protobuf and JSON Schema serdes in the Confluent wire format, over a schema registry.

Each serde wraps confluent-kafka's own serializer and deserializer, so the bytes are those a
Java or confluent-kafka producer writes: magic byte 0, the 4-byte schema id, the payload. The
registry is asked once per schema: confluent-kafka's client caches ids and schemas, and every
serde with the same client settings shares one client, so the hot path makes no HTTP call.

A serde learns its topic and whether it is a key when the topology puts it on a source or a
sink (:meth:`RegistrySerde.for_topic`), which is what ``TopicNameStrategy`` needs. A serde of a
state store is not on a topic: give it ``topic=`` (its changelog) or use ``RecordNameStrategy``.
"""

from __future__ import annotations

import contextlib
import copy
import struct
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from streamrt.errors import ConfigError
from streamrt.schema_registry.config import RegistrySettings, registry_settings

__all__ = (
    "AvroSerde",
    "JsonSchemaSerde",
    "ProtobufSerde",
    "RegistrySerde",
    "SchemaDeserializationError",
    "SchemaSerializationError",
    "schema_id_of",
)

Codec = Callable[[Any, SerializationContext], Any]
CodecFactory = Callable[[SchemaRegistryClient, RegistrySettings, bool], Codec]

_CLIENTS: dict[tuple[tuple[str, str], ...], SchemaRegistryClient] = {}
_CLIENTS_LOCK = threading.Lock()
_MAGIC = 0
_ID = struct.Struct(">I")


def _client(settings: RegistrySettings) -> SchemaRegistryClient:
    """One client (one schema cache) per distinct client settings, across every serde."""
    key = settings.cache_key()
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = SchemaRegistryClient(dict(settings.client))
        return client


def schema_id_of(data: bytes) -> int | None:
    """The schema id of Confluent wire-format bytes, or None if they are not in that format."""
    if len(data) < 5 or data[0] != _MAGIC:
        return None
    return int(_ID.unpack_from(data, 1)[0])


class SchemaDeserializationError(ValueError):
    """A record's bytes could not be read through the registry (unknown schema id, registry
    unreachable, payload not matching its schema): the deserialization handler decides."""

    def __init__(self, topic: str | None, schema_id: int | None, url: str, cause: Exception):
        where = f"topic {topic!r}" if topic else "a store"
        sid = "no Confluent wire-format header" if schema_id is None else f"schema id {schema_id}"
        super().__init__(
            f"cannot deserialize a record of {where} with {sid} (registry {url}): "
            f"{type(cause).__name__}: {cause}"
        )
        self.topic = topic
        self.schema_id = schema_id


class SchemaSerializationError(ValueError):
    """A value could not be written through the registry: the production handler decides."""


class RegistrySerde:
    """A registry serde: ``serialize``/``deserialize`` as every streamrt serde, plus the topic.

    Subclasses only say which confluent-kafka serializer and deserializer to build; they are
    built on first use (so constructing an app never calls the registry) and shared by the
    copies :meth:`for_topic` makes.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        serializer: CodecFactory,
        deserializer: CodecFactory,
        *,
        topic: str | None = None,
        is_key: bool = False,
    ) -> None:
        self.settings = registry_settings(config)
        self.topic = topic
        self.is_key = is_key
        self._pinned_topic = topic is not None
        self._factories = (serializer, deserializer)
        self._codecs: dict[bool, tuple[Codec | None, Codec | None]] = {}
        self._lock = threading.Lock()
        self._read_back: set[tuple[bool, int]] = set()

    def for_topic(self, topic: str, *, is_key: bool) -> RegistrySerde:
        """This serde on ``topic`` as key or value (a ``topic=`` given explicitly wins)."""
        if self.topic == topic and self.is_key == is_key:
            return self
        bound = copy.copy(self)  # shares the settings, codecs and lock
        bound.topic = self.topic if self._pinned_topic else topic
        bound.is_key = is_key
        return bound

    def _codec(self, index: int) -> Codec:
        with self._lock:
            pair = self._codecs.get(self.is_key, (None, None))
            codec = pair[index]
            if codec is None:
                codec = self._factories[index](_client(self.settings), self.settings, self.is_key)
                new = (codec, pair[1]) if index == 0 else (pair[0], codec)
                self._codecs[self.is_key] = new
            return codec

    def _context(self) -> SerializationContext:
        field = MessageField.KEY if self.is_key else MessageField.VALUE
        return SerializationContext(self.topic or "", field)

    def serialize(self, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            data: bytes = self._codec(0)(value, self._context())
        except Exception as exc:
            where = f"topic {self.topic!r}" if self.topic else "a store"
            raise SchemaSerializationError(
                f"cannot serialize a {'key' if self.is_key else 'value'} for {where} "
                f"(registry {self.settings.url}): {type(exc).__name__}: {exc}"
            ) from exc
        self._read_back_once(data)
        return data

    def _read_back_once(self, data: bytes) -> None:
        """Read a new schema id's first bytes back while the registry is up.

        Registering caches the id under the subject only; a reader (a store reading what it
        wrote, under RecordNameStrategy) looks it up by id. Reading once fills that cache, so a
        store keeps working while the registry is down. Best effort: a failure here is not the
        write's.
        """
        sid = schema_id_of(data)
        if sid is None or (self.is_key, sid) in self._read_back:
            return
        self._read_back.add((self.is_key, sid))
        with contextlib.suppress(Exception):
            self._codec(1)(data, self._context())

    def deserialize(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return self._codec(1)(data, self._context())
        except Exception as exc:
            raise SchemaDeserializationError(
                self.topic, schema_id_of(data), self.settings.url, exc
            ) from exc


ToDict = Callable[[Any, SerializationContext], dict[str, Any]]
FromDict = Callable[[dict[str, Any], SerializationContext], Any]


class _DictSchemaSerde(RegistrySerde):
    """What Avro and JSON Schema share: a schema string (needed to serialize) and the
    ``to_dict``/``from_dict`` object mappers; each subclass builds its codecs."""

    def __init__(
        self,
        config: Mapping[str, Any],
        schema: str | None = None,
        *,
        to_dict: ToDict | None = None,
        from_dict: FromDict | None = None,
        topic: str | None = None,
        is_key: bool = False,
    ) -> None:
        name = type(self).__name__
        make_ser, de = self._codec_factories(schema, to_dict, from_dict)

        def ser(client: SchemaRegistryClient, s: RegistrySettings, key: bool) -> Codec:
            if schema is None:
                raise ConfigError(f"{name} needs a schema to serialize")
            return make_ser(client, s, key)

        super().__init__(config, ser, de, topic=topic, is_key=is_key)

    @staticmethod
    def _codec_factories(
        schema: str | None, to_dict: ToDict | None, from_dict: FromDict | None
    ) -> tuple[CodecFactory, CodecFactory]:
        """The serializer factory (called only with a schema) and the deserializer factory."""
        raise NotImplementedError


class AvroSerde(_DictSchemaSerde):
    """Avro records (dicts) via fastavro.

    ``schema`` is the writer schema when serializing and the reader schema when deserializing
    (None: read with each record's writer schema, or the subject's latest schema with
    ``use.latest.version=true``). ``to_dict``/``from_dict`` map objects to and from dicts.
    """

    @staticmethod
    def _codec_factories(
        schema: str | None, to_dict: ToDict | None, from_dict: FromDict | None
    ) -> tuple[CodecFactory, CodecFactory]:
        from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

        def ser(client: SchemaRegistryClient, s: RegistrySettings, key: bool) -> Codec:
            codec: Codec = AvroSerializer(client, schema, to_dict, s.serializer_conf(key))
            return codec

        def de(client: SchemaRegistryClient, s: RegistrySettings, key: bool) -> Codec:
            codec: Codec = AvroDeserializer(
                client, schema, from_dict, conf=s.deserializer_conf(key)
            )
            return codec

        return ser, de


class JsonSchemaSerde(_DictSchemaSerde):
    """JSON documents validated against a JSON Schema (``schema``, a JSON string)."""

    @staticmethod
    def _codec_factories(
        schema: str | None, to_dict: ToDict | None, from_dict: FromDict | None
    ) -> tuple[CodecFactory, CodecFactory]:
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

        def ser(client: SchemaRegistryClient, s: RegistrySettings, key: bool) -> Codec:
            codec: Codec = JSONSerializer(schema, client, to_dict, s.serializer_conf(key))
            return codec

        def de(client: SchemaRegistryClient, s: RegistrySettings, key: bool) -> Codec:
            codec: Codec = JSONDeserializer(schema, from_dict, client, s.deserializer_conf(key))
            return codec

        return ser, de


class ProtobufSerde(RegistrySerde):
    """Protobuf messages of one generated ``message_type`` (its file is registered)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        message_type: type,
        *,
        topic: str | None = None,
        is_key: bool = False,
    ) -> None:
        from confluent_kafka.schema_registry.protobuf import (
            ProtobufDeserializer,
            ProtobufSerializer,
        )

        def ser(client: SchemaRegistryClient, s: RegistrySettings, key: bool) -> Codec:
            conf = {**s.serializer_conf(key), "use.deprecated.format": False}
            codec: Codec = ProtobufSerializer(message_type, client, conf)  # type: ignore[arg-type]
            return codec

        def de(client: SchemaRegistryClient, s: RegistrySettings, key: bool) -> Codec:
            conf = {**s.deserializer_conf(key), "use.deprecated.format": False}
            codec: Codec = ProtobufDeserializer(message_type, conf, client)  # type: ignore[arg-type]
            return codec

        super().__init__(config, ser, de, topic=topic, is_key=is_key)
