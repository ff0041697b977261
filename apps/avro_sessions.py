"""Session counts over Avro topics: clicks in, one profile per user out, Avro in the store.

``clicks-avro`` holds ``Click`` records in the Confluent wire format (written by any Avro
producer: Java's ``KafkaAvroSerializer``, confluent-kafka's ``AvroSerializer``, ...), keyed by
user as a plain string. Each click is folded into the user's ``Profile``, kept in the
``avro-profiles`` store (its changelog holds Avro too, subject by ``RecordNameStrategy``) and
written to ``avro-session-profiles``. ``SCHEMA_REGISTRY_URL`` says where the registry is
(``streamrt dev registry`` prints it). Version 2 of the app (``make_app(..., version=2)``)
reads with schemas that add defaulted fields: the records and state version 1 wrote still read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from streamrt.runtime import App
from streamrt.schema_registry import AvroSerde

__all__ = ("CLICK_V1", "CLICK_V2", "PROFILE_V1", "PROFILE_V2", "app", "make_app")


def _record(name: str, fields: list[dict[str, Any]]) -> str:
    return json.dumps(
        {"type": "record", "name": name, "namespace": "streamrt.demo", "fields": fields}
    )


_CLICK_FIELDS: list[dict[str, Any]] = [
    {"name": "user", "type": "string"},
    {"name": "page", "type": "string"},
    {"name": "ts", "type": "long"},
]
CLICK_V1 = _record("Click", _CLICK_FIELDS)
CLICK_V2 = _record(
    "Click", [*_CLICK_FIELDS, {"name": "referrer", "type": "string", "default": "direct"}]
)
_PROFILE_FIELDS: list[dict[str, Any]] = [
    {"name": "user", "type": "string"},
    {"name": "clicks", "type": "long"},
    {"name": "last_page", "type": "string"},
]
PROFILE_V1 = _record("Profile", _PROFILE_FIELDS)
PROFILE_V2 = _record(
    "Profile",
    [
        *_PROFILE_FIELDS,
        {"name": "referrers", "type": {"type": "map", "values": "long"}, "default": {}},
    ],
)


def _fold(version: int) -> Any:
    def add(user: str, click: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
        profile = {**profile, "user": user, "clicks": profile["clicks"] + 1}
        profile["last_page"] = click["page"]
        if version >= 2:
            referrers = dict(profile.get("referrers", {}))
            referrers[click["referrer"]] = referrers.get(click["referrer"], 0) + 1
            profile["referrers"] = referrers
        return profile

    return add


def make_app(settings: Mapping[str, str], registry: Mapping[str, Any], *, version: int = 1) -> App:
    """The app; ``registry`` holds the serdes' settings (``schema.registry.url``, ...)."""
    click, profile = (CLICK_V1, PROFILE_V1) if version == 1 else (CLICK_V2, PROFILE_V2)
    store_serde = AvroSerde(
        {**registry, "value.subject.name.strategy": "RecordNameStrategy"}, profile
    )
    app = App({"application.id": "avro-sessions", **settings})
    (
        app.stream("clicks-avro", key_serde="str", value_serde=AvroSerde(registry, click))
        .group_by_key()
        .aggregate(
            lambda: {"user": "", "clicks": 0, "last_page": ""},
            _fold(version),
            store="avro-profiles",
            value_serde=store_serde,
            caching=False,
        )
        .to_stream()
        .to("avro-session-profiles", value_serde=AvroSerde(registry, profile))
    )
    return app


app = make_app(
    {}, {"schema.registry.url": os.environ.get("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081")}
)
