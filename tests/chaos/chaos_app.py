"""The chaos test's stateful app: a table join, a repartition, a per-key fold and a windowed
count over one input stream, as Kafka's streams system tests combine them.

``orders`` (key: user, value: an order id) is joined with the ``user-regions`` table (key: user,
value: region), re-keyed by region through a repartition topic and counted per region
(``region-counts-out``); the same orders are counted per user (``user-counts-out``) and per user
and 5-second tumbling window (``user-window-counts-out``, key ``<user>@<window start>``). With
the record cache off every update is emitted, so under exactly-once each output key's counts are
exactly 1..n, and under at-least-once the last count of each key is at least n.
"""

from __future__ import annotations

from streamrt.runtime import App, TimeWindows, Windowed

__all__ = ("INPUT", "OUTPUTS", "TABLE", "WINDOW_MS", "app", "make_app")

INPUT = "orders"
TABLE = "user-regions"
WINDOW_MS = 5_000
# a grace far beyond any run: replayed records are never dropped as late
GRACE_MS = 3_600_000
OUTPUTS = ("user-counts-out", "region-counts-out", "user-window-counts-out")


def _region(order: str, region: str) -> str:
    return region


def _window_key(window: Windowed, count: int) -> tuple[str, int]:
    return f"{window.key}@{window.start}", count


def build(app: App) -> App:
    regions = app.table(TABLE, store="regions", key_serde="str", value_serde="str")
    orders = app.stream(INPUT, key_serde="str", value_serde="str")
    orders.group_by_key().count(store="user-counts").to_stream().to(
        "user-counts-out", value_serde="int"
    )
    (
        orders.join(regions, _region)
        .group_by(lambda user, region: region, name="by-region", key_serde="str")
        .count(store="region-counts")
        .to_stream()
        .to("region-counts-out", value_serde="int")
    )
    (
        orders.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
        .count(store="user-windows")
        .to_stream()
        .map(_window_key, key_serde="str", value_serde="int")
        .to("user-window-counts-out")
    )
    return app


def make_app(settings: dict[str, str]) -> App:
    """The topology with ``settings`` (``application.id`` defaults to ``chaos``)."""
    return build(App({"application.id": "chaos", "statestore.cache.max.bytes": "0", **settings}))


app = make_app({})
