"""A counting app for the 3-broker tests; ``CLUSTER_APP_ID`` names it and its topics, so each
test on the shared cluster has its own group, state and topics."""

from __future__ import annotations

import os

from streamrt.runtime import App


def build(application_id: str, settings: dict[str, str] | None = None) -> App:
    """Counts per key of ``<id>-in`` into ``<id>-out`` (store ``counts``)."""
    app = App({"application.id": application_id, **(settings or {})})
    (
        app.stream(f"{application_id}-in", key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="counts")
        .to_stream()
        .to(f"{application_id}-out", value_serde="int")
    )
    return app


app = build(os.environ.get("CLUSTER_APP_ID", "cluster-counting"))
