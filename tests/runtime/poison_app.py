"""An app whose user code raises on some records, for exception-handler tests.

``orders`` holds JSON objects; ``doubled`` gets ``amount * 2`` as an int. ``{"x": 1}`` makes
``map_values`` raise KeyError (processing), a non-JSON value fails deserialization, and
``{"amount": "ab"}`` gives ``"abab"``, which the int sink serde cannot write (production).
"""

from __future__ import annotations

from typing import Any

from streamrt.runtime import App


def build(app: App) -> App:
    (
        app.stream("orders", key_serde="str", value_serde="json")
        .map_values(lambda order: order["amount"] * 2)
        .to("doubled", value_serde="int")
    )
    return app


def make_app(settings: dict[str, Any], **kwargs: Any) -> App:
    return build(App({"application.id": "poison", **settings}, **kwargs))


app = make_app({})
