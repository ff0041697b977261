"""Quix Streams contender of ``bench/avro_sessions_peers.py``: the Avro sessions fold.

The fold of ``apps/avro_sessions.py`` (version 1), written as a Quix user would: Avro in and
out through Quix's own registry serdes, state in Quix's RocksDB store. Runs in the bench venv
(Quix Streams 3.28.1 needs confluent-kafka < 2.13). Configured by ``AVRO_PEERS_*`` variables.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from quixstreams import Application
from quixstreams.models.serializers.avro import AvroDeserializer, AvroSerializer
from quixstreams.models.serializers.schema_registry import SchemaRegistryClientConfig

ENV = os.environ.get
PROFILE = json.loads(ENV("AVRO_PEERS_PROFILE_SCHEMA", "{}"))


def fold(click: dict[str, Any], state: Any) -> dict[str, Any]:
    profile = state.get("profile") or {"user": click["user"], "clicks": 0, "last_page": ""}
    profile = {**profile, "clicks": profile["clicks"] + 1, "last_page": click["page"]}
    state.set("profile", profile)
    return profile


def main() -> None:
    registry = SchemaRegistryClientConfig(url=ENV("AVRO_PEERS_REGISTRY"))
    app = Application(
        broker_address=ENV("AVRO_PEERS_BOOTSTRAP"),
        consumer_group=ENV("AVRO_PEERS_GROUP", "quix-avro"),
        auto_offset_reset="earliest",
        state_dir=ENV("AVRO_PEERS_STATE_DIR", "state"),
        loglevel="WARNING",
    )
    src = app.topic(
        ENV("AVRO_PEERS_IN", "clicks-avro"),
        key_deserializer="str",
        value_deserializer=AvroDeserializer(schema_registry_client_config=registry),
    )
    sink = app.topic(
        ENV("AVRO_PEERS_OUT", "quix-avro-profiles"),
        key_serializer="str",
        value_serializer=AvroSerializer(PROFILE, schema_registry_client_config=registry),
    )
    app.dataframe(src).apply(fold, stateful=True).to_topic(sink)
    app.run()


if __name__ == "__main__":
    main()
