"""The session-profile fold: the workload of rolling-deploy scenarios, shared by every contender.

Pure functions with no framework import, so the sessions app (``streamrt.examples.sessions``),
the faust-streaming contender (``bench/faust_sessions.py``), the deploy report's correctness
check and the Spark verification job (``streamrt report verify``) compute, or recompute,
exactly the same profiles. It ships in the package, beside the app, because the demo and the
library's own jobs depend on it; ``apps/`` is example code that is not installed.
"""

from __future__ import annotations

from typing import Any

__all__ = ("PROFILE_PADDING", "RECENT_PAGES", "add_click", "new_profile")

RECENT_PAGES = 50
PROFILE_PADDING = 2048  # bytes of attributes, so each profile is a few KB


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
    """Fold one click (``{"user", "page", "ts"}``) into ``user``'s profile."""
    page = str(click.get("page", "?"))
    ts = click.get("ts")
    profile["clicks"] += 1
    profile["pages"][page] = profile["pages"].get(page, 0) + 1
    profile["recent"] = ([page, *profile["recent"]])[:RECENT_PAGES]
    profile["first_ts"] = profile["first_ts"] if profile["first_ts"] is not None else ts
    profile["last_ts"] = ts
    return profile
