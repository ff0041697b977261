"""The counting app with a pause: run with ``PAUSING_APP_PAUSE=1``, the process stops itself
(SIGSTOP) while processing the first ``pause`` record, its commit lock held and the records
before it counted but not committed: a zombie made on cue, resumed by the test (SIGCONT)."""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any

from streamrt.runtime import App

PAUSE_KEY = "pause"

logger = logging.getLogger(__name__)


def pause_once(key: Any, _value: Any) -> None:
    if key == PAUSE_KEY and os.environ.get("PAUSING_APP_PAUSE") == "1":
        os.environ["PAUSING_APP_PAUSE"] = "0"
        logger.warning("pausing (SIGSTOP)")
        os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(1)  # the stop reaches this thread at a syscall, not at once: here
        logger.warning("resumed (SIGCONT)")


app = App({"application.id": "counting"})
(
    app.stream("events", key_serde="str", value_serde="str")
    .peek(pause_once)
    .group_by_key()
    .count(store="event-counts")
    .to_stream()
    .to("event-counts-out", value_serde="int")
)
