"""``streamrt report verify``: the sessions app's profiles against a recomputation in Spark.

The correct output is folded with the app's own ``new_profile``/``add_click``; a second output
topic has one profile off by one click and must yield exactly that key.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from streamrt.broker.embedded import BrokerThread
from streamrt.cli import main
from streamrt.deploy.session_profiles import add_click, new_profile
from streamrt.spark.verify import verify_sessions
from tests.kafka_helpers import create_topic, produce_acked

pytestmark = pytest.mark.spark

CLICKS = [
    ("ann", {"user": "ann", "page": "/home", "ts": 1.0}),
    ("bob", {"user": "bob", "page": "/cart", "ts": 2.0}),
    ("ann", {"user": "ann", "page": "/item", "ts": 3.0}),
    ("cid", {"user": "cid", "ts": 4.0}),  # no page: the app counts it as "?"
    ("ann", {"user": "ann", "page": "/home", "ts": 5.5}),
    ("bob", {"user": "bob", "page": "/pay", "ts": 6.0}),
]


def _fold() -> list[tuple[str, dict[str, Any]]]:
    """Every profile update the app emits, in order."""
    profiles: dict[str, dict[str, Any]] = {}
    updates = []
    for user, click in CLICKS:
        profile = add_click(user, click, profiles.get(user) or new_profile())
        profiles[user] = profile
        updates.append((user, json.loads(json.dumps(profile))))
    return updates


def test_verify_finds_exactly_the_wrong_key(
    spark: SparkSession,
    broker: BrokerThread,
    topic_name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clicks, good, bad = f"{topic_name}-clicks", f"{topic_name}-good", f"{topic_name}-bad"
    for topic in (clicks, good, bad):
        create_topic(broker.bootstrap, topic, 2)
    produce_acked(
        broker.bootstrap, clicks, [(u.encode(), json.dumps(c).encode()) for u, c in CLICKS]
    )
    updates = _fold()
    produce_acked(
        broker.bootstrap, good, [(u.encode(), json.dumps(p).encode()) for u, p in updates]
    )
    wrong = [(u, {**p, "clicks": p["clicks"] + 1} if u == "bob" else p) for u, p in updates]
    produce_acked(broker.bootstrap, bad, [(u.encode(), json.dumps(p).encode()) for u, p in wrong])

    assert verify_sessions(spark, broker.bootstrap, clicks, good) == []

    mismatches = verify_sessions(spark, broker.bootstrap, clicks, bad)
    assert [m["key"] for m in mismatches] == ["bob"]
    expected, actual = (json.loads(mismatches[0][side]) for side in ("expected", "actual"))
    assert (expected["clicks"], actual["clicks"]) == (2, 3)
    assert expected["recent"] == ["/pay", "/cart"]
    assert expected["pages"] == [{"key": "/cart", "value": 1}, {"key": "/pay", "value": 1}]

    args = ["report", "verify", "--bootstrap-server", broker.bootstrap, "--input-topic", clicks]
    assert main([*args, "--output-topic", good]) == 0
    assert main([*args, "--output-topic", bad]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines if line.startswith("MISMATCH")] == ["key=bob"]
