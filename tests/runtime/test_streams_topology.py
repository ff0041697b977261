"""The topology a ``group.protocol=streams`` member sends: the runtime's own subtopologies,
internal topic names and configs in KIP-1071's terms; and the process id kept per state dir."""

from __future__ import annotations

import threading
from pathlib import Path

from streamrt.runtime import App
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.rebalance.streams_topology import (
    PROCESS_FILE,
    process_id,
    streams_topology,
)


def _env(app: App) -> ThreadEnv:
    config = app.resolve_config()
    subs = tuple(app.topology.subtopologies(config.application_id))
    return ThreadEnv(config, app.topology, subs, "i", False, lambda *a, **k: None)


def test_a_repartitioned_count_and_a_copartitioned_join() -> None:
    app = App({"application.id": "wc", "group.protocol": "streams"})
    (
        app.stream("words", key_serde="str", value_serde="str")
        .group_by(lambda _k, v: v, key_serde="str")
        .count(store="counts")
        .to_stream()
        .to("counts-out", value_serde="int")
    )
    table = app.table("names", key_serde="str", value_serde="str")
    app.stream("clicks", key_serde="str", value_serde="str").join(table, lambda c, n: n).to("out")
    wire = streams_topology(_env(app)).wire()
    subs = {s["subtopology_id"]: s for s in wire["subtopologies"]}
    assert wire["epoch"] == 0 and sorted(subs) == ["0", "1", "2"]
    reads = next(s for s in subs.values() if s["source_topics"] == ["words"])
    (repartition,) = reads["repartition_sink_topics"]
    assert repartition.startswith("wc-") and repartition.endswith("-repartition")
    counts = next(s for s in subs.values() if s["repartition_source_topics"])
    assert counts["source_topics"] == []
    assert [t["name"] for t in counts["repartition_source_topics"]] == [repartition]
    assert counts["repartition_source_topics"][0]["partitions"] == 0  # the broker derives it
    (changelog,) = counts["state_changelog_topics"]
    assert changelog["name"] == "wc-counts-changelog" and changelog["partitions"] == 0
    assert changelog["topic_configs"] == [{"key": "cleanup.policy", "value": "compact"}]
    joins = next(s for s in subs.values() if "clicks" in s["source_topics"])
    assert sorted(joins["source_topics"]) == ["clicks", "names"]
    (group,) = joins["copartition_groups"]
    assert sorted(group["source_topics"]) == [0, 1] and group["repartition_source_topics"] == []


def test_process_id_is_kept_per_state_dir_and_shared_by_threads(tmp_path: Path) -> None:
    found: list[str] = []
    workers = [
        threading.Thread(target=lambda: found.append(process_id(tmp_path / "app")))
        for _ in range(4)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(set(found)) == 1  # the threads of one instance race for the file: one id
    assert process_id(tmp_path / "app") == found[0]  # a restart reads it back
    assert process_id(tmp_path / "other") != found[0]
    (tmp_path / "app" / PROCESS_FILE).write_text("not json")
    fresh = process_id(tmp_path / "app")  # a damaged file is replaced, not fatal
    assert fresh != found[0] and process_id(tmp_path / "app") == fresh
