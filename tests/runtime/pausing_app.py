"""The counting app with a pause: run with ``PAUSING_APP_PAUSE=1``, the process stops itself
(SIGSTOP) while processing the first ``pause`` record, its commit lock held and the records
before it counted but not committed: a zombie made on cue, resumed by the test (SIGCONT)."""

from __future__ import annotations

import os
import signal
from typing import Any

from streamrt.runtime import App

PAUSE_KEY = "pause"


def pause_once(key: Any, _value: Any) -> None:
    if key == PAUSE_KEY and os.environ.get("PAUSING_APP_PAUSE") == "1":
        os.environ["PAUSING_APP_PAUSE"] = "0"
        os.kill(os.getpid(), signal.SIGSTOP)


app = App({"application.id": "counting"})
(
    app.stream("events", key_serde="str", value_serde="str")
    .peek(pause_once)
    .group_by_key()
    .count("event-counts")
    .to_stream()
    .to("event-counts-out", value_serde="int")
)
