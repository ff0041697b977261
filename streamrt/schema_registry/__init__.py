"""Schema Registry serdes (Avro, Protobuf, JSON Schema) in the Confluent wire format.

Needs the ``registry`` extra (``pip install 'streamrt[registry]'``). See docs/serdes.md.
"""

from streamrt.schema_registry.config import RegistrySettings, registry_settings
from streamrt.schema_registry.serdes import (
    AvroSerde,
    JsonSchemaSerde,
    ProtobufSerde,
    RegistrySerde,
    SchemaDeserializationError,
    SchemaSerializationError,
    schema_id_of,
)

__all__ = (
    "AvroSerde",
    "JsonSchemaSerde",
    "ProtobufSerde",
    "RegistrySerde",
    "RegistrySettings",
    "SchemaDeserializationError",
    "SchemaSerializationError",
    "registry_settings",
    "schema_id_of",
)
