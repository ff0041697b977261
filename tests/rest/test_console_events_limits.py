"""The console's timeline against hostile events (issue 42): bounded memory, no 500, no forgery.

A real instance publishes its own (signed) lifecycle events to ``counting-events``; a real
client adds oversized, malformed, forged and many valid events to the same topic. Through
``/v1/timeline``: every bad one is skipped and counted by reason, the instance's own rebalance
still shows and is trusted, a forged ``fatal_error`` does not show, and what the console keeps
stays within ``rest.console.timeline.max.bytes``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamrt.events import event_mac
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import TOKEN, close_publishers, running, start_instance, url

pytestmark = pytest.mark.slow

MAX_BYTES = 256 * 1024
EVENT_MAX_BYTES = 16 * 1024


def _event(kind: str, fields: dict[str, Any], *, pid: int = 4242) -> dict[str, Any]:
    return {
        "v": 1,
        "ts": time.time(),
        "application_id": "counting",
        "instance_id": "intruder",
        "thread": 1,
        "thread_id": "intruder-thread-1",
        "static": True,
        "pid": pid,
        "host": "elsewhere",
        "type": kind,
        "fields": fields,
    }


def _value(event: dict[str, Any], key: str | None = None) -> bytes:
    if key is not None:
        event = {**event, "mac": event_mac(key, event)}
    return json.dumps(event).encode()


def test_timeline_skips_oversized_malformed_and_forged_events_within_a_byte_budget(
    broker_factory: Callable[..., object], tmp_path: Path
) -> None:
    bootstrap = broker_factory().bootstrap  # type: ignore[attr-defined]
    create_topic(bootstrap, "events", 1)
    create_topic(bootstrap, "event-counts-out", 1)
    limits = {
        "rest.console.timeline.max.bytes": str(MAX_BYTES),
        "rest.console.event.max.bytes": str(EVENT_MAX_BYTES),
    }
    app = start_instance(bootstrap, tmp_path, "web-1", threads=1, extra=limits, events=True)
    try:
        wait_until(lambda: running(app, partitions=1), 60, "instance running")

        def timeline() -> dict[str, Any]:
            response = httpx.get(url(app) + "/v1/timeline", timeout=30)
            assert response.status_code == 200, response.text
            body: dict[str, Any] = response.json()
            return body

        wait_until(
            lambda: any(e["type"] == "rebalance" for e in timeline()["entries"]),
            60,
            "the instance's own rebalance in the timeline",
        )
        big = _event("commit", {"offsets": {"events-0": 1}, "pad": "x" * 100_000})
        bad = _event("rebalance_complete", {"generation": "not-a-number"})
        forged = _event("fatal_error", {"error": "forged: all is lost"})
        wrong_key = _event("fatal_error", {"error": "signed with another key"})
        signed = [  # valid and signed: only the byte budget limits how many are kept
            _value(_event("commit", {"offsets": {f"events-{i}": i}, "pad": "y" * 2000}), TOKEN)
            for i in range(400)
        ]
        values = [_value(big, TOKEN)] * 30 + [_value(bad, TOKEN), b"{not json", b"[1, 2]"]
        values += [_value(forged), _value(wrong_key, "another-secret"), *signed]
        produce(bootstrap, "counting-events", [(b"intruder", v) for v in values])

        def skipped() -> dict[str, int]:
            counts: dict[str, int] = timeline()["skipped"]
            return counts

        wait_until(
            lambda: skipped() == {"oversized": 30, "malformed": 3, "untrusted": 2},
            60,
            "every bad event skipped and counted",
        )
        body = timeline()
        assert body["verification"] == "hmac-sha256"
        assert body["max_bytes"] == MAX_BYTES
        assert 0 < body["kept_bytes"] <= MAX_BYTES
        assert {s["kind"] for s in body["last_skipped"]} <= {"oversized", "malformed", "untrusted"}
        kinds = {e["type"] for e in body["entries"]}
        assert "rebalance" in kinds and "fatal_error" not in kinds
        assert all(e["trusted"] is True for e in body["entries"])
    finally:
        app.stop()
        close_publishers()


def test_without_a_key_the_timeline_says_it_cannot_tell_who_wrote_an_event(
    broker_factory: Callable[..., object], tmp_path: Path
) -> None:
    bootstrap = broker_factory().bootstrap  # type: ignore[attr-defined]
    create_topic(bootstrap, "events", 1)
    create_topic(bootstrap, "event-counts-out", 1)
    app = start_instance(bootstrap, tmp_path, "web-1", threads=1, token=None, events=True)
    try:
        wait_until(lambda: running(app, partitions=1), 60, "instance running")
        forged = _event("fatal_error", {"error": "forged: all is lost"})
        produce(bootstrap, "counting-events", [(b"intruder", _value(forged))])

        def entries() -> list[dict[str, Any]]:
            response = httpx.get(url(app) + "/v1/timeline", timeout=30)
            assert response.status_code == 200, response.text
            assert response.json()["verification"] == "none"
            found: list[dict[str, Any]] = response.json()["entries"]
            return found

        wait_until(
            lambda: any(e["type"] == "fatal_error" for e in entries()), 60, "the forged entry"
        )
        assert all(e["trusted"] is False for e in entries())
    finally:
        app.stop()
        close_publishers()
