"""The enrichment example (apps/enrichment.py) through the test driver."""

from __future__ import annotations

from apps.enrichment import app
from streamrt.testing import TopologyTestDriver


def test_clicks_are_enriched_with_the_user_known_at_click_time() -> None:
    with TopologyTestDriver(app) as d:
        users = d.create_input_topic("users", "str", "json")
        clicks = d.create_input_topic("clicks", "str", "json")
        out = d.create_output_topic("enriched-clicks", "str", "json")
        clicks.pipe_input("u1", {"page": "/a"}, timestamp=1)
        users.pipe_input("u1", {"name": "ann", "country": "fr"}, timestamp=2)
        clicks.pipe_input("u1", {"page": "/b"}, timestamp=3)
        users.pipe_input("u1", {"name": "ann", "country": "de"}, timestamp=4)
        clicks.pipe_input("u1", {"page": "/c"}, timestamp=5)
        got = [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]
        assert d.get_key_value_store("users-store").get("u1")["country"] == "de"
    assert got == [
        ("u1", {"page": "/a", "user": "unknown"}, 1),
        ("u1", {"page": "/b", "user": "ann", "country": "fr"}, 3),
        ("u1", {"page": "/c", "user": "ann", "country": "de"}, 5),
    ]
