"""The counting app for hand-off tests, with knobs a test turns from outside the process.

``HANDOFF_APP_MODE_FILE`` names a file read at import, so a reload (same argv, same env) picks
up "new code": ``crash`` raises during start-up, ``v2`` builds another topology, ``slow`` makes
each record take ``HANDOFF_APP_RECORD_SLEEP`` seconds (so a stop takes a while).
``HANDOFF_APP_HOLD_FILE`` names a file that, while it exists, holds every record (checked at
run time): a stop waits for the record in hand, so a hand-off cannot finish until the test
removes the file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from streamrt.runtime import App

_mode_file = os.environ.get("HANDOFF_APP_MODE_FILE")
MODE = Path(_mode_file).read_text().strip() if _mode_file and Path(_mode_file).exists() else ""
if MODE == "crash":
    raise RuntimeError("handoff_app: simulated crash during start-up")
_sleep = float(os.environ.get("HANDOFF_APP_RECORD_SLEEP", "0.01")) if MODE == "slow" else 0.0
_hold = os.environ.get("HANDOFF_APP_HOLD_FILE")


def _slow(value: str) -> str:
    if _sleep:
        time.sleep(_sleep)
    while _hold and os.path.exists(_hold):
        time.sleep(0.01)
    return value


app = App({"application.id": "handoff-counting"})
stream = app.stream("events", key_serde="str", value_serde="str").map_values(_slow)
if MODE == "v2":
    stream = stream.filter(lambda _k, v: v != "skip")
(
    stream.group_by_key()
    .count(store="event-counts")
    .to_stream()
    .to("event-counts-out", value_serde="int")
)
