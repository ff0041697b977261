"""The web console (issue 28) in a real browser against three running instances.

Headless Chromium (Debian's package) opens ``/console`` on one instance's REST endpoint: the
partition x thread map shows every partition once, a restoring task shows its progress, a
stopped instance is shown down without holding the page up, and a member removal clicked on
the page moves its partitions. Real broker, real instances. Screenshots go to the test's
temporary directory, or to ``$STREAMRT_SCREENSHOTS`` (``STREAMRT_SCREENSHOTS=docs`` refreshes
the ones in ``docs/``; they were reduced to 128 colours with Pillow before they were committed).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from streamrt.rest.console_proxy import ConsoleThread
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.browser import Browser, chromium_missing
from tests.rest.instances import (
    TOKEN,
    close_publishers,
    running,
    start_instance,
    url,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_missing() is not None, reason=str(chromium_missing())),
]

BROKER = {"group.min.session.timeout.ms": "1000", "group.max.session.timeout.ms": "60000"}
SESSION_MS = 30_000
SHOTS_ENV = "STREAMRT_SCREENSHOTS"
STANDBYS = {"num.standby.replicas": "1"}
# a slow restore on purpose, so the page can be seen mid-way: small fetches, few records a step
SLOW_RESTORE = {
    "restore.consumer.max.poll.records": "2",
    "restore.consumer.max.partition.fetch.bytes": "2048",
}
# changelog records added to each partition of the restarted instance's active tasks, so its
# restoration spans several of the page's 2 s refreshes: 2-record polls in a tight loop still
# apply over 10,000 records/s (50,000 took 4.2 s of restore time, 20,000 about one refresh)
PAD_PER_PARTITION = 100_000

# the page's own view, read from its DOM
ACTIVE_BY_PARTITION = """(() => {
  const out = {};
  const chips = '#map [data-role="active"], #map [data-role="restoring"]';
  for (const c of document.querySelectorAll(chips))
    (out[c.dataset.partition] = out[c.dataset.partition] || []).push(c.dataset.thread);
  return out; })()"""
THREAD_COLUMNS = (
    "[...document.querySelectorAll('#map thead tr:nth-child(2) th')].map(e => e.textContent)"
)
RESTORING = """[...document.querySelectorAll('#map [data-role="restoring"]')].map(c => ({
  task: c.dataset.task, pct: Number(c.dataset.progress),
  value: c.querySelector('progress').value, max: c.querySelector('progress').max}))"""
STATUS_OF = "document.querySelector('#instances tr[data-instance=\"{0}\"]')?.dataset.status"


class Load:
    """Keeps producing to ``events`` so lag and throughput move."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            produce(
                self.bootstrap, "events", [(f"k{(n + i) % 400}".encode(), b"e") for i in range(100)]
            )
            n += 100
            time.sleep(0.2)


@pytest.fixture
def cluster(broker_factory: object, tmp_path: Path) -> Iterator[tuple[str, list[App], Path]]:
    broker = broker_factory(BROKER)  # type: ignore[operator]
    create_topic(broker.bootstrap, "events", 8)
    create_topic(broker.bootstrap, "event-counts-out", 8)
    apps = [
        start_instance(
            broker.bootstrap,
            tmp_path,
            f"web-{i}",
            session_timeout_ms=SESSION_MS,
            events=True,
            extra=STANDBYS,
        )
        for i in (1, 2, 3)
    ]
    load = Load(broker.bootstrap)
    load.thread.start()
    try:
        yield broker.bootstrap, apps, tmp_path
    finally:
        load.stop.set()
        load.thread.join(30)
        for app in apps:
            app.stop()
        close_publishers()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get(SHOTS_ENV) or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where


def every_partition_once(browser: Browser, threads: set[str]) -> dict[str, list[str]] | None:
    owners = browser.js(ACTIVE_BY_PARTITION) or {}
    if sorted(owners) != [str(p) for p in range(8)]:
        return None
    if any(len(t) != 1 for t in owners.values()) or not {t[0] for t in owners.values()} <= threads:
        return None
    return owners


def test_console_map_restore_down_instance_and_removal(
    cluster: tuple[str, list[App], Path], shots: Path
) -> None:
    bootstrap, apps, state = cluster
    wait_until(lambda: running(*apps), 90, "three instances running")
    all_threads = {f"web-{i}-thread-{n}" for i in (1, 2, 3) for n in (1, 2)}
    with Browser() as browser:
        browser.open(url(apps[0]) + "/console")
        wait_until(lambda: every_partition_once(browser, all_threads), 60, "every partition once")
        assert set(browser.js(THREAD_COLUMNS)) == all_threads
        browser.wait_js(
            "document.querySelectorAll('#map [data-role=\"standby\"]').length >= 8",
            30,
            "a standby of every task",
        )
        browser.wait_js(
            "document.querySelectorAll('#timeline li.rebalance').length", 30, "timeline"
        )
        assert browser.js(
            "[...document.querySelectorAll('#instances button')].every(b => b.disabled)"
        )
        time.sleep(6)  # a few chart samples
        charts = "document.querySelectorAll('#lag-chart canvas, #rate-chart canvas').length"
        assert browser.js(charts) == 2  # uPlot drew both under the page's CSP
        check_console_json(apps[0])
        browser.screenshot(shots / "console.png")

        own = active_tasks(apps[1])
        apps[1] = restart_with_empty_state(bootstrap, apps[1], state)
        wait_until(lambda: active_tasks(apps[1]) == own, 30, "web-2 back with its own tasks")
        seen = browser.wait_js(
            f"(() => {{ const r = {RESTORING}; return r.some(x => x.pct < 100) && r; }})()",
            60,
            "a restoring task with its progress",
        )
        assert all(0 <= x["value"] <= x["max"] for x in seen)
        browser.screenshot(shots / "console-restoring.png")
        wait_until(
            lambda: not browser.js(RESTORING) and every_partition_once(browser, all_threads),
            120,
            "restoration done",
        )

        remove_from_page(browser, apps, shots)
        through_console_command(browser, apps)


def check_console_json(app: App) -> None:
    """The JSON the page reads: this instance's tasks with roles, lags and history; settings
    that say mutations are possible without ever carrying the token."""
    local = httpx.get(url(app) + "/v1/tasks", timeout=10).json()
    assert [t["thread_name"] for t in local["threads"]] == ["web-1-thread-1", "web-1-thread-2"]
    tasks = [task for t in local["threads"] for task in t["tasks"]]
    assert {t["role"] for t in tasks} == {"active", "standby"}
    assert all(isinstance(t["lag"], int) and t["lag"] >= 0 for t in tasks)
    history = local["history"]
    assert len(history["t"]) >= 2 and history["tasks"]
    assert any(r for s in history["tasks"].values() for r in s["rate"] if r)  # records/s > 0
    settings = httpx.get(url(app) + "/v1/console/settings", timeout=10)
    assert settings.json()["mutations_enabled"] is True and TOKEN not in settings.text


def active_tasks(app: App) -> set[str]:
    """The instance's active tasks, restoring ones included."""
    return {task for t in app.metadata_for_local_threads() for task in t.active_tasks}


def restart_with_empty_state(bootstrap: str, app: App, state: Path) -> App:
    """Pad the changelog of ``app``'s active tasks, stop it (static: no leave), wipe its state
    and start it again on the same port: it rejoins with its old tasks and must restore them.

    The pad comes before the stop, so the instance is away only for a stop and a start, well
    inside its session timeout: a static member back in time gets its previous assignment
    without a rebalance (KIP-345). Padding while it was down (160,000 records one send at a
    time, in the process the broker and the instances share) stretched that on a loaded
    machine; past the session timeout it is expelled, and the rebalance rightly (KIP-441, as
    Kafka Streams' high-availability assignor) gives its tasks to the caught-up standbys and
    it warm-ups only: no task then restores from an empty store.
    """
    assert app.config is not None and app.config.application_server is not None
    port = int(app.config.application_server.rsplit(":", 1)[1])
    partitions = sorted({int(task.rsplit("_", 1)[1]) for task in active_tasks(app)})
    assert partitions, "web-2 holds no active task to restore"
    produce(
        bootstrap,
        "counting-event-counts-changelog",
        [
            (f"pad-{p}-{i}".encode(), b"\x00\x00\x00\x01")
            for p in partitions
            for i in range(PAD_PER_PARTITION)
        ],
        partitions=[p for p in partitions for _ in range(PAD_PER_PARTITION)],
    )
    app.stop()
    shutil.rmtree(state / "web-2")
    return start_instance(
        bootstrap,
        state,
        "web-2",
        session_timeout_ms=SESSION_MS,
        port=port,
        events=True,
        extra={**STANDBYS, **SLOW_RESTORE},
    )


def remove_from_page(browser: Browser, apps: list[App], shots: Path) -> None:
    """Stop web-3: the page shows it down at once; remove it with the token from the page."""
    apps[2].stop()
    browser.wait_js(STATUS_OF.format("web-3") + " === 'down'", 20, "web-3 shown down")
    began = time.monotonic()
    assert httpx.get(url(apps[0]) + "/v1/cluster", timeout=10).status_code == 200
    assert time.monotonic() - began < 5  # one dead instance does not hold the page up
    browser.screenshot(shots / "console-down.png")

    browser.type_text("#token", TOKEN)
    browser.click("#token-form button")
    reload_from_page(browser, apps)
    button = '#instances tr[data-instance="web-3"] [data-action=remove] button'
    browser.wait_js(f"!document.querySelector({button!r}).disabled", 10, "removal enabled")
    browser.click(button)  # arm
    browser.click(button)  # confirm
    browser.wait_js(
        "document.getElementById('message').textContent.includes('web-3-thread-1: removed')",
        60,  # a bound: the removal is one LeaveGroup, but the page and a loaded machine are slow
        "the removal's result on the page",
    )
    survivors = {f"web-{i}-thread-{n}" for i in (1, 2) for n in (1, 2)}
    wait_until(lambda: every_partition_once(browser, survivors), 60, "web-3's partitions moved")
    try:
        browser.wait_js(
            "[...document.querySelectorAll('#timeline li.rebalance')]"
            # web-3-thread-1 among those who left (under load others can leave in the same
            # generation, listed before it)
            ".some(li => /left: [^;]*web-3-thread-1/.test(li.textContent))",
            60,  # a bound, as for the partitions above: the page polls, a loaded machine is slow
            "the rebalance in the timeline",
        )
    except TimeoutError as exc:  # say what the timeline held instead
        timeline = httpx.get(url(apps[0]) + "/v1/timeline", timeout=10).json()
        rebalances = [
            (e["generation"], e["members"], e["left"])
            for e in timeline["entries"]
            if e["type"] == "rebalance"
        ]
        raise TimeoutError(f"{exc}; read {timeline['events_read']}: {rebalances}") from exc
    assert "s3cret" not in browser.js("document.documentElement.outerHTML")
    browser.screenshot(shots / "console-removed.png")


def reload_from_page(browser: Browser, apps: list[App]) -> None:
    """Reload web-2 from web-1's page: forwarded with the typed token to web-2, which answers
    (an in-process app does not reload on SIGHUP: 409, shown on the page)."""
    button = '#instances tr[data-instance="web-2"] [data-action=reload] button'
    browser.wait_js(f"!document.querySelector({button!r}).disabled", 10, "reload enabled")
    browser.click(button)
    browser.click(button)
    browser.wait_js(
        "document.getElementById('message').textContent.includes('does not reload on SIGHUP')",
        30,
        "web-2's answer on the page",
    )
    reload = url(apps[0]) + "/v1/reload"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = httpx.post(reload, params={"instance_id": "web-2"}, headers=auth, timeout=30)
    assert r.status_code == 409 and r.json()["error"] == "RELOAD_UNSUPPORTED"
    assert httpx.post(reload, params={"instance_id": "web-2"}, timeout=30).status_code == 401
    r = httpx.post(reload, params={"instance_id": "web-3"}, headers=auth, timeout=30)
    assert r.status_code == 502 and r.json()["error"] == "FORWARD_FAILED"  # web-3 is stopped
    r = httpx.post(reload, params={"instance_id": "web-9"}, headers=auth, timeout=30)
    assert r.status_code == 404 and r.json()["error"] == "UNKNOWN_INSTANCE"
    r = httpx.post(reload, params={"instance_id": "../x"}, headers=auth, timeout=30)
    assert r.status_code == 422


def through_console_command(browser: Browser, apps: list[App]) -> None:
    """``streamrt console`` with a stopped instance's URL first: it fails over to one that
    answers, and its page shows the same map."""
    console = ConsoleThread([url(apps[2]), url(apps[0])], TOKEN).start()
    try:
        browser.open(console.url)
        survivors = {f"web-{i}-thread-{n}" for i in (1, 2) for n in (1, 2)}
        wait_until(lambda: every_partition_once(browser, survivors), 30, "the map via the console")
        assert browser.js("document.getElementById('mode').textContent") == "read-only"
    finally:
        console.stop()
