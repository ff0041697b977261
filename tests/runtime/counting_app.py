"""A counting app for process-level tests: counts values per key from ``events``."""

from __future__ import annotations

from streamrt.runtime import App

app = App({"application.id": "counting"})
(
    app.stream("events", key_serde="str", value_serde="str")
    .group_by_key()
    .count(store="event-counts")
    .to_stream()
    .to("event-counts-out", value_serde="int")
)


def make_app(settings: dict[str, str]) -> App:
    """The same topology with settings, for in-process instances."""
    fresh = App({"application.id": "counting", **settings})
    (
        fresh.stream("events", key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="event-counts")
        .to_stream()
        .to("event-counts-out", value_serde="int")
    )
    return fresh
