"""Click enrichment: clicks (keyed by user id) joined with the ``users`` table.

Every click on ``clicks`` leaves ``enriched-clicks`` with the user's name and country; a click
of an unknown user keeps ``"unknown"`` (a left join). ``clicks`` and ``users`` must have the same
partition count (checked at start). Run with ``streamrt run apps/enrichment.py``.
"""

from __future__ import annotations

from typing import Any

from streamrt.runtime import App, StreamsBuilder


def enrich(click: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
    """The click with the user's name and country (``"unknown"`` if the user is not known)."""
    if user is None:
        return {**click, "user": "unknown"}
    return {**click, "user": user["name"], "country": user.get("country")}


def build(builder: StreamsBuilder) -> None:
    users = builder.table("users", store="users-store", key_serde="str", value_serde="json")
    (
        builder.stream("clicks", key_serde="str", value_serde="json")
        .left_join(users, enrich)
        .to("enriched-clicks", key_serde="str", value_serde="json")
    )


app = App({"application.id": "enrichment"})
build(app.builder)
