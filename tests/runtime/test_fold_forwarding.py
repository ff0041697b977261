"""A fold whose result only streams on (``aggregate().to_stream().to()``, the sessions fold)
builds no ``Change(new, old)`` per update: no child of the aggregate takes one, and each
construction cost ~0.4-1.7 us (issue 40). A table child (``KTable.filter``) still gets the
Change it needs; the outputs are the same either way."""

from __future__ import annotations

from typing import Any

import pytest

from streamrt.runtime import App
from streamrt.runtime import processor as processor_module
from streamrt.testing import TopologyTestDriver


def _fold(table_child: bool) -> App:
    app = App({"application.id": "fold", "statestore.cache.max.bytes": 0})
    table = (
        app.stream("clicks", key_serde="str", value_serde="json")
        .group_by_key()
        .aggregate(lambda: {"n": 0, "pages": []}, _add, store="profiles")
    )
    if table_child:
        table = table.filter(lambda _k, v: v["n"] > 0)
    table.to_stream().to("out", value_serde="json")
    return app


def _add(_key: Any, click: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    profile["n"] += 1
    profile["pages"].append(click["page"])
    return profile


def _run(app: App) -> list[tuple[Any, Any, int]]:
    with TopologyTestDriver(app) as driver:
        clicks = driver.create_input_topic("clicks", "str", "json")
        out = driver.create_output_topic("out", "str", "json")
        for ts, (user, page) in enumerate([("a", "/1"), ("b", "/2"), ("a", "/3")]):
            clicks.pipe_input(user, {"page": page}, timestamp=10 + ts)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


@pytest.mark.parametrize("table_child", [False, True])
def test_a_fold_builds_a_change_only_for_a_child_that_takes_one(
    table_child: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tuple[Any, ...]] = []
    change = processor_module.Change

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return change(*args, **kwargs)

    monkeypatch.setattr(processor_module, "Change", counting)
    outputs = _run(_fold(table_child))
    assert outputs == [
        ("a", {"n": 1, "pages": ["/1"]}, 10),
        ("b", {"n": 1, "pages": ["/2"]}, 11),
        ("a", {"n": 2, "pages": ["/1", "/3"]}, 12),
    ]
    assert len(built) == (3 if table_child else 0)
