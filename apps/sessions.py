"""Session profiles: a heavy-state app for benchmarks.

Clicks (JSON ``{"user": ..., "page": ..., "ts": ...}``, keyed by user) on ``clicks`` are
folded into one profile per user, a few KB each: counters, the last pages seen and a padded
attribute blob. Profiles go to ``session-profiles`` and live in the ``profiles`` store.
"""

from __future__ import annotations

from typing import Any

from streamrt.runtime import App

RECENT_PAGES = 50
PROFILE_PADDING = 2048  # bytes of attributes, so each profile is a few KB

app = App({"application.id": "sessions"})


def new_profile() -> dict[str, Any]:
    return {
        "clicks": 0,
        "pages": {},
        "recent": [],
        "first_ts": None,
        "last_ts": None,
        "attributes": "x" * PROFILE_PADDING,
    }


def add_click(user: str, click: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    page = str(click.get("page", "?"))
    ts = click.get("ts")
    profile["clicks"] += 1
    profile["pages"][page] = profile["pages"].get(page, 0) + 1
    profile["recent"] = ([page, *profile["recent"]])[:RECENT_PAGES]
    profile["first_ts"] = profile["first_ts"] if profile["first_ts"] is not None else ts
    profile["last_ts"] = ts
    return profile


(
    app.stream("clicks", key_serde="str", value_serde="json")
    .group_by_key()
    .aggregate(new_profile, add_click, store="profiles")
    .to_stream()
    .to("session-profiles", value_serde="json")
)
