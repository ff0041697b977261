"""Registry serdes in ``TopologyTestDriver``: the test topics bind the serdes to their topics."""

from __future__ import annotations

from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient

from apps.avro_sessions import CLICK_V1, PROFILE_V1, make_app
from streamrt.dev.apicurio import ApicurioRegistry
from streamrt.schema_registry import AvroSerde
from streamrt.testing import TopologyTestDriver


def test_the_avro_app_under_the_test_driver(
    tmp_path: Any, registry: ApicurioRegistry, serde_config: dict[str, Any]
) -> None:
    app = make_app({"state.dir": str(tmp_path)}, serde_config)
    with TopologyTestDriver(app) as driver:
        clicks = driver.create_input_topic("clicks-avro", "str", AvroSerde(serde_config, CLICK_V1))
        out = driver.create_output_topic(
            "avro-session-profiles", "str", AvroSerde(serde_config, PROFILE_V1)
        )
        for page in ("/a", "/b"):
            clicks.pipe_input("zoe", {"user": "zoe", "page": page, "ts": 1})
        assert [r.value for r in out.read_records_to_list()] == [
            {"user": "zoe", "clicks": 1, "last_page": "/a"},
            {"user": "zoe", "clicks": 2, "last_page": "/b"},
        ]
    subjects = SchemaRegistryClient({"url": registry.url}).get_subjects()
    assert "clicks-avro-value" in subjects and "avro-session-profiles-value" in subjects
