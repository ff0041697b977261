"""Windowed apps end to end: embedded broker, aiokafka, RocksDB, REST.

- apps/pageviews_windowed.py: emit-final counts per page and minute (exactly one record per
  window, none before it closes) and windowed interactive queries over REST answering every
  key from the task that owns it (the old bug hashed the window bytes: 2 of 12 found);
- apps/user_sessions.py: one final record per (merged) session;
- window store changelogs are created ``compact,delete`` with retention + 1 day.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from aiokafka.partitioner import murmur2

from apps import pageviews_windowed, user_sessions
from streamrt.admin import AdminClient
from streamrt.rest.wiring import attach_rest
from streamrt.runtime import App, Windowed
from tests.kafka_helpers import create_topic, produce, read_all, wait_until
from tests.rest.instances import free_port

PAGES = [f"page-{i}" for i in range(12)]
# records carry 1970 timestamps: without this the broker rolls and deletes them at once
KEEP = {"retention.ms": "-1"}


def settings(bootstrap: str, state: Path, app_id: str, **extra: str) -> dict[str, str]:
    return {
        "application.id": app_id,
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "commit.interval.ms": "200",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
        **extra,
    }


def json_records(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    return [json.loads(r.value) for r in read_all(bootstrap, topic)]


def topic_config(bootstrap: str, topic: str) -> dict[str, str | None]:
    async def go() -> dict[str, str | None]:
        async with AdminClient(bootstrap) as admin:
            entries = (await admin.describe_topic_configs([topic]))[topic]
        return {name: e.value for name, e in entries.items()}

    return asyncio.run(go())


def test_pageviews_emit_final_and_windowed_queries_over_rest(broker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "pageviews", 4, **KEEP)
    create_topic(bootstrap, "pageviews-per-minute", 1, **KEEP)
    # page i: i + 1 views in minute 0, one view in minute 1
    views = [(p, 1_000 + j) for i, p in enumerate(PAGES) for j in range(i + 1)]
    views += [(p, 61_000) for p in PAGES]
    produce(
        bootstrap,
        "pageviews",
        [(p.encode(), b"u") for p, _ in views],
        timestamps=[t for _, t in views],
    )
    port = free_port()
    app = pageviews_windowed.build(
        App(
            settings(
                bootstrap,
                tmp_path / "state",
                "pageviews",
                **{"application.server": f"127.0.0.1:{port}", "num.stream.threads": "2"},
            )
        )
    )
    attach_rest(app)
    app.start()
    base = f"http://127.0.0.1:{port}/v1/stores/{pageviews_windowed.STORE}/keys"
    expected = {p: [[0, 60_000, i + 1], [60_000, 120_000, 1]] for i, p in enumerate(PAGES)}

    def answers() -> dict[str, Any]:
        out = {}
        for page in PAGES:
            r = httpx.get(f"{base}/{page}/windows", params={"from": 0, "to": 100_000}, timeout=10)
            if r.status_code != 200:
                return {"status": r.status_code, "body": r.text}
            out[page] = [[w["start"], w["end"], w["value"]] for w in r.json()["windows"]]
        return out

    try:
        seen: list[Any] = []

        def all_answered() -> bool:
            seen[:] = [answers()]
            return seen[0] == expected

        try:
            wait_until(all_answered, what="every page's windows over REST")
        except AssertionError:
            raise AssertionError(f"last answers: {seen}") from None
        # nothing is final yet: stream time is 61 s in every task, below 60 s + 10 s grace
        assert json_records(bootstrap, "pageviews-per-minute") == []
        narrow = httpx.get(f"{base}/page-3/windows", params={"from": 60_000, "to": 60_000})
        assert [w["value"] for w in narrow.json()["windows"]] == [1]
        assert httpx.get(f"{base}/page-3").status_code == 400  # points at the windows route
        # routing: the record key alone picks the task, whatever the window
        for page in PAGES:
            task = app.queries.task_for_key(pageviews_windowed.STORE, page)
            assert task == f"0_{(murmur2(page.encode()) & 0x7FFFFFFF) % 4}"
            assert (
                app.queries.task_for_key(pageviews_windowed.STORE, Windowed(page, 60_000, 120_000))
                == task
            )
            assert app.query_window(pageviews_windowed.STORE, page, 0, 0) == [
                (0, 60_000, PAGES.index(page) + 1)
            ]
        # advance stream time in every partition: minutes 0 and 1 close
        produce(
            bootstrap,
            "pageviews",
            [(b"tick", b"u")] * 4,
            timestamps=[200_000] * 4,
            partitions=range(4),
        )

        def finals() -> list[tuple[str, int, int]]:
            return sorted(
                (r["page"], r["start"], r["views"])
                for r in json_records(bootstrap, "pageviews-per-minute")
                if r["page"] != "tick"
            )

        want = sorted(
            [(p, 0, i + 1) for i, p in enumerate(PAGES)] + [(p, 60_000, 1) for p in PAGES]
        )
        wait_until(lambda: finals() == want, what="one final count per page and minute")
        # a late view of minute 0 (beyond grace) changes nothing and emits nothing
        produce(bootstrap, "pageviews", [(b"page-0", b"u")], timestamps=[2_000])
        produce(
            bootstrap,
            "pageviews",
            [(b"tick", b"u")] * 4,
            timestamps=[300_000] * 4,
            partitions=range(4),
        )
        wait_until(
            lambda: (
                sum(t.records_processed for t in app.metadata_for_local_threads()) >= len(views) + 9
            ),
            what="the late view and the second ticks processed",
        )
        assert finals() == want
        changelog = topic_config(bootstrap, f"pageviews-{pageviews_windowed.STORE}-changelog")
        assert changelog["cleanup.policy"] == "compact,delete"
        assert changelog["retention.ms"] == str(70_000 + 86_400_000)
    finally:
        app.stop()
    assert app.fatal_error is None


def test_user_sessions_emit_one_record_per_final_session(broker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "clicks", 1, **KEEP)
    create_topic(bootstrap, "user-sessions", 1, **KEEP)
    clicks = [("ann", 0), ("ann", 10_000), ("bob", 5_000), ("ann", 44_000), ("ann", 35_000)]
    # ann 35 s bridges [0, 10 s] and [44 s, 44 s] (still open: 10 s + gap 30 s + grace 5 s
    # > stream time 44 s): one session [0, 44 s] of 4 clicks
    # As Kafka's KIP-825 emit-final, a session is emitted after a record, from the session
    # store, and a record far ahead first expires older segments: ticks at 80 s and 236 s
    # close ann's sessions in time; each tick's own session then expires unemitted
    clicks += [("tick", 80_000), ("ann", 200_000), ("tick", 236_000), ("tick", 400_000)]
    app = user_sessions.build(App(settings(bootstrap, tmp_path / "state", "sessions-app")))
    produce(
        bootstrap,
        "clicks",
        [(u.encode(), b"/") for u, _ in clicks],
        timestamps=[t for _, t in clicks],
    )
    app.start()
    try:

        def sessions() -> list[tuple[str, int, int, int]]:
            return sorted(
                (r["user"], r["start"], r["end"], r["clicks"])
                for r in json_records(bootstrap, "user-sessions")
            )

        want = [("ann", 0, 44_000, 4), ("ann", 200_000, 200_000, 1), ("bob", 5_000, 5_000, 1)]
        wait_until(lambda: sessions() == want, what="final sessions")
        assert app.query_window(user_sessions.STORE, "tick", 0, 10**12) == [(400_000, 400_000, 1)]
    finally:
        app.stop()
    assert app.fatal_error is None
