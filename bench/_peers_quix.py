"""Quix Streams contender of ``bench/peers_throughput.py``, written as a Quix user would.

Runs in its own venv (``.venv-bench``, the ``bench`` extra: Quix Streams 3.28.1 needs
confluent-kafka < 2.13, the project's test/spark extras pin 2.16.1). Quix's defaults are kept
(at-least-once, commit every 5 s, RocksDB state with changelog topics). Configured by the same
``PEERS_*`` environment as ``bench/_peers_streamrt.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers_workloads import stateless_keep, stateless_map, words
from quixstreams import Application

from streamrt.deploy.session_profiles import add_click, new_profile

ENV = os.environ.get


def count(word: str, state: Any) -> int:
    n = int(state.get("n", 0)) + 1
    state.set("n", n)
    return n


def fold(click: dict[str, Any], state: Any) -> dict[str, Any]:
    profile = add_click(click["user"], click, state.get("profile") or new_profile())
    state.set("profile", profile)
    return profile


def main() -> None:
    workload = ENV("PEERS_WORKLOAD", "stateless")
    app = Application(
        broker_address=ENV("PEERS_BOOTSTRAP"),
        consumer_group=ENV("PEERS_APP_ID", "peers"),
        auto_offset_reset="earliest",
        state_dir=ENV("PEERS_STATE_DIR", "state"),
        loglevel="WARNING",
    )
    value_format = "str" if workload == "wordcount" else "json"
    src = app.topic(ENV("PEERS_IN", "in"), key_deserializer="str", value_deserializer=value_format)
    sink = app.topic(ENV("PEERS_OUT", "out"), key_serializer="str", value_serializer="json")
    sdf = app.dataframe(src)
    if workload == "stateless":
        sdf = sdf.filter(stateless_keep).apply(stateless_map)
    elif workload == "wordcount":
        sdf = sdf.apply(words, expand=True)
        sdf = sdf.group_by(lambda word: word, name="words")
        sdf = sdf.apply(count, stateful=True)
    else:
        sdf = sdf.apply(fold, stateful=True)
    sdf.to_topic(sink)
    app.run()


if __name__ == "__main__":
    main()
