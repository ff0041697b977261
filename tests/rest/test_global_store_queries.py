"""Interactive queries of a global table's store over REST (every instance holds all of it, as
Kafka Streams' global stores): answered locally, not 404 UNKNOWN_STORE as if it did not exist."""

from __future__ import annotations

from pathlib import Path

import httpx

from streamrt.rest.wiring import attach_rest
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import free_port


def test_a_global_store_is_queryable_over_rest(broker, tmp_path: Path) -> None:
    b = broker.bootstrap
    for name in ("gq-rates", "gq-visits", "gq-out"):
        create_topic(b, name, 2)
    produce(b, "gq-rates", [(b"eur", b"1.1")], partition=1)
    port = free_port()
    app = App(
        {
            "application.id": "gq",
            "bootstrap.servers": b,
            "state.dir": str(tmp_path),
            "application.server": f"127.0.0.1:{port}",
        }
    )
    rates = app.global_table("gq-rates", store="rates", key_serde="str", value_serde="str")
    app.stream("gq-visits", key_serde="str", value_serde="str").join(
        rates, lambda v, r: f"{v}@{r}", key_mapper=lambda _k, v: v
    ).to("gq-out", key_serde="str", value_serde="str")
    attach_rest(app)
    app.start()
    base = f"http://127.0.0.1:{port}/v1/stores/rates/keys"
    try:

        def found() -> bool:
            r = httpx.get(f"{base}/eur", timeout=30)
            assert r.status_code in (200, 503), r.text
            return r.status_code == 200 and r.json()["found"]

        wait_until(found, 60, "eur over REST")
        body = httpx.get(f"{base}/eur", timeout=30).json()
        assert body["value"] == "1.1" and body["instance_id"] == app.instance_id
        missing = httpx.get(f"{base}/usd", timeout=30)
        assert missing.status_code == 200 and missing.json()["found"] is False
        windows = httpx.get(f"{base}/eur/windows", timeout=30)
        assert windows.status_code == 400 and windows.json()["error"] == "NOT_A_WINDOW_STORE"
    finally:
        app.stop()
