"""Page views per page and minute, one final count per window (emit-final).

``pageviews`` holds one record per view, keyed by page (value: the user, text). Counts per
one-minute tumbling window, accepting views up to 10 s late, live in the window store
``pageviews-per-minute-store`` (queryable: ``GET /v1/stores/pageviews-per-minute-store/keys/
<page>/windows?from=<ms>&to=<ms>``). Once a window closes (stream time past its end + grace)
its final count goes to ``pageviews-per-minute`` as JSON ``{page, start, end, views}``, keyed
by page: exactly one record per page and minute, nothing while the minute is open.
"""

from __future__ import annotations

from typing import Any

from streamrt.runtime import App, BufferConfig, Suppressed, TimeWindows, Windowed

__all__ = ("GRACE_MS", "STORE", "WINDOW_MS", "app", "build")

WINDOW_MS = 60_000
GRACE_MS = 10_000
STORE = "pageviews-per-minute-store"


def _result(window: Windowed, views: int) -> tuple[str, dict[str, Any]]:
    page = window.key
    return page, {"page": page, "start": window.start, "end": window.end, "views": views}


def build(app: App) -> App:
    (
        app.stream("pageviews", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
        .count(store=STORE)
        .suppress(
            Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("pageviews-final")
        )
        .to_stream()
        .map(_result, key_serde="str", value_serde="json")
        .to("pageviews-per-minute")
    )
    return app


app = build(App({"application.id": "pageviews-windowed"}))
