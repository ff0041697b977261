"""A query path whose percent-escapes are not UTF-8 (``%FF``) is refused with 400, not read as
U+FFFD: that silent replacement answered ``found: false`` for a key nobody sent, and could
match a stored key that really contains U+FFFD. Escaped UTF-8 keys still work."""

from __future__ import annotations

from pathlib import Path

from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import get, running, start_instance


def test_a_path_that_is_not_utf8_is_a_400_and_utf8_keys_are_found(broker, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "events", 8)
    create_topic(broker.bootstrap, "event-counts-out", 8)
    produce(broker.bootstrap, "events", [("é".encode(), b"x"), ("\ufffd".encode(), b"x")])
    app = start_instance(broker.bootstrap, tmp_path, "q1", threads=1)
    try:
        wait_until(lambda: running(app), 60, "q1 owns every partition")
        for key in ("%C3%A9", "%EF%BF%BD"):  # "é" and a real U+FFFD, each stored once

            def counted(key: str = key) -> bool:
                r = get(app, f"/v1/stores/event-counts/keys/{key}")
                return r.status_code == 200 and r.json()["value"] == 1

            wait_until(counted, 60, f"count of {key}")
        for path in ("/v1/stores/event-counts/keys/%FF", "/v1/stores/%FF%FE/keys/a"):
            r = get(app, path)
            assert r.status_code == 400, r.text
            assert r.json()["error"] == "BAD_PATH"
            assert "UTF-8" in r.json()["message"]
    finally:
        app.stop()
