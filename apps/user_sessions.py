"""User sessions: clicks per session, one final record per session (session windows).

``clicks`` holds one record per click keyed by user (value: the page, text). A session is a
run of a user's clicks with no gap longer than 30 s; sessions that a late click bridges are
merged. Sessions live in the session store ``user-sessions-store`` (queryable by user and time
range); once a session can no longer grow (stream time past its end + gap + grace) it goes to
``user-sessions`` as JSON ``{user, start, end, clicks}``, keyed by user, exactly once.
"""

from __future__ import annotations

from typing import Any

from streamrt.runtime import App, SessionWindows, Windowed

__all__ = ("GAP_MS", "GRACE_MS", "STORE", "app", "build")

GAP_MS = 30_000
GRACE_MS = 5_000
STORE = "user-sessions-store"


def _result(session: Windowed, clicks: int) -> tuple[str, dict[str, Any]]:
    user = session.key
    return user, {"user": user, "start": session.start, "end": session.end, "clicks": clicks}


def build(app: App) -> App:
    (
        app.stream("clicks", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP_MS, GRACE_MS))
        .count(store=STORE, emit_strategy="on_window_close")
        .to_stream()
        .map(_result, key_serde="str", value_serde="json")
        .to("user-sessions")
    )
    return app


app = build(App({"application.id": "user-sessions"}))
