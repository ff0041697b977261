"""The sessions app that ``streamrt demo`` rolls: session profiles, a heavy-state app.

Clicks (JSON ``{"user": ..., "page": ..., "ts": ...}``, keyed by user) on ``clicks`` are
folded into one profile per user, a few KB each: counters, the last pages seen and a padded
attribute blob (:mod:`streamrt.examples.session_profiles`). Profiles go to
``session-profiles`` and live in the ``profiles`` store. The store is not cached
(``caching=False``): every click emits its user's profile at once, which the rolling-deploy
scenario's output gaps and one-output-per-input check rely on. ``SESSIONS_STARTUP_DELAY=N``
makes the import take N more seconds, as a real app's slow start-up.
"""

from __future__ import annotations

import os
import time

from streamrt.examples.session_profiles import (
    PROFILE_PADDING,
    RECENT_PAGES,
    add_click,
    new_profile,
)
from streamrt.runtime import App

__all__ = ("PROFILE_PADDING", "RECENT_PAGES", "add_click", "app", "new_profile")

# A slow start-up (heavy imports, models, pools) for the rolling-deploy benchmark.
time.sleep(float(os.environ.get("SESSIONS_STARTUP_DELAY", "0") or 0))

app = App({"application.id": "sessions"})

(
    app.stream("clicks", key_serde="str", value_serde="json")
    .group_by_key()
    .aggregate(new_profile, add_click, store="profiles", caching=False)
    .to_stream()
    .to("session-profiles", value_serde="json")
)
