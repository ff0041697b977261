"""stream.thread.mode=process: each stream thread in its own child process, the parent
supervising, aggregating state and serving the one REST endpoint.

Real embedded broker, real aiokafka, real RocksDB, real child processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamrt.admin.client import AdminClient
from streamrt.errors import ConfigError
from streamrt.runtime import App
from streamrt.runtime.instance.metadata import AppState
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until
from tests.rest.instances import free_port
from tests.runtime.counting_app import make_app

pytestmark = pytest.mark.slow

SPEC = "tests.runtime.counting_app:app"
# a restart (interpreter, app and children start-up) on a loaded machine can take > 10 s
FAST = {"session.timeout.ms": "30000", "heartbeat.interval.ms": "500", "commit.interval.ms": "200"}


def events(n: int, keys: int = 16, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % keys}".encode(), b"e") for i in range(start, start + n)]


def expected(n: int, keys: int = 16) -> dict[str, int]:
    return dict(Counter(f"k{i % keys}" for i in range(n)))


def counts(bootstrap: str) -> dict[str, int]:
    return {
        k.decode(): struct.unpack(">q", v)[0]
        for k, v in latest_by_key(read_all(bootstrap, "event-counts-out")).items()
    }


def group_ids(bootstrap: str) -> list[str]:
    async def go() -> list[str]:
        async with AdminClient(bootstrap) as admin:
            groups = await admin.describe_groups(["counting"])
        return sorted(m.group_instance_id or "" for m in groups["counting"].members)

    return asyncio.run(go())


def process_app(bootstrap: str, state: Path, threads: int = 2) -> App:
    app = make_app(
        {
            "bootstrap.servers": bootstrap,
            "state.dir": str(state),
            "group.instance.id": "proc",
            "num.stream.threads": str(threads),
            "stream.thread.mode": "process",
            **FAST,
        }
    )
    app.app_spec = SPEC  # the child imports the module-level app with the same topology
    return app


def running(app: App, partitions: int = 8) -> bool:
    threads = app.metadata_for_local_threads()
    owned = {p for t in threads for p in t.topic_partitions if p[0] == "events"}
    return len(owned) == partitions and {t.state.name for t in threads} == {"RUNNING"}


def test_two_thread_processes_count_exactly_answer_queries_and_survive_sigkill(
    broker, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "events", 8)
    create_topic(broker.bootstrap, "event-counts-out", 8)
    produce(broker.bootstrap, "events", events(400))
    app = process_app(broker.bootstrap, tmp_path)
    app.start()
    try:
        wait_until(lambda: running(app), what="both thread processes running")
        assert app.state is AppState.RUNNING
        pids = {i: t.pid for i, t in app.threads.items()}
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
        assert group_ids(broker.bootstrap) == ["proc-thread-1", "proc-thread-2"]
        per_thread = [len(t.topic_partitions) for t in app.metadata_for_local_threads()]
        assert per_thread == [4, 4]
        wait_until(lambda: counts(broker.bootstrap) == expected(400), what="exact counts")

        meta = app.metadata_for_all_clients()
        assert [m.instance_id for m in meta] == ["proc"]
        assert meta[0].thread_instance_ids == ("proc-thread-1", "proc-thread-2")
        assert len(meta[0].tasks) == 8
        # interactive query: the parent relays it to the child owning the key's task
        wait_until(lambda: app.query_local("event-counts", "k3") == 25, what="query via child")
        assert app.query_local("event-counts", "nope") is None

        os.kill(pids[2], signal.SIGKILL)
        wait_until(
            lambda: app.threads[2].pid != pids[2] and running(app),
            what="the killed thread process replaced",
        )
        assert app.thread_failures == 1
        assert app.threads[1].pid == pids[1]
        produce(broker.bootstrap, "events", events(160, start=400))
        wait_until(lambda: counts(broker.bootstrap) == expected(560), what="counts after kill")
    finally:
        app.stop()
    assert app.state is AppState.NOT_RUNNING
    for pid in (t.pid for t in app.threads.values()):
        assert pid is not None and not _alive(pid)


def test_remove_and_add_a_thread_process(broker, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "events", 4)
    create_topic(broker.bootstrap, "event-counts-out", 4)
    app = process_app(broker.bootstrap, tmp_path)
    app.start()
    try:
        wait_until(lambda: running(app, 4), what="both running")
        pid = app.threads[2].pid
        assert app.remove_stream_thread() == 2
        assert pid is not None and not _alive(pid)
        wait_until(
            lambda: group_ids(broker.bootstrap) == ["proc-thread-1"] and running(app, 4),
            timeout=8,  # well before session.timeout.ms: removed by LeaveGroup
            what="thread 1 owns every partition",
        )
        assert app.add_stream_thread() == 2
        wait_until(
            lambda: (
                group_ids(broker.bootstrap) == ["proc-thread-1", "proc-thread-2"]
                and running(app, 4)
            ),
            what="thread 2 back",
        )
    finally:
        app.stop()


def test_an_app_that_is_no_module_variable_is_refused_in_process_mode(broker, tmp_path) -> None:
    app = process_app(broker.bootstrap, tmp_path)
    app.app_spec = None
    with pytest.raises(ConfigError, match="module-level"):
        app.start()
    app.stop()


def test_bad_mode_is_refused() -> None:
    app = make_app({"bootstrap.servers": "127.0.0.1:1", "stream.thread.mode": "fork"})
    with pytest.raises(ConfigError, match=r"stream\.thread\.mode"):
        app.resolve_config()


# -- streamrt run: SIGTERM, static restart, REST ---------------------------------------------------


def run_cli(bootstrap: str, state: Path, port: int, mode: str = "process") -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "streamrt.cli",
        "--log-format",
        "json",
        "run",
        SPEC,
        "--instance-id",
        "proc",
        "--threads",
        "2",
        "--bootstrap-server",
        bootstrap,
        "--state-dir",
        str(state),
        "--application-server",
        f"127.0.0.1:{port}",
        "--config",
        f"stream.thread.mode={mode}",
    ]
    for key, value in FAST.items():
        args += ["--config", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )


def generations(bootstrap: str) -> list[int]:
    """The group generation of each ``rebalance_complete`` event, in order (events topic)."""
    out = []
    for record in read_all(bootstrap, "counting-events"):
        event = json.loads(record.value)
        if event["type"] == "rebalance_complete":
            out.append(event["fields"]["generation"])
    return out


def rest(port: int, path: str) -> Any:
    response = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10)
    response.raise_for_status()
    return response.json()


def threads_running(port: int) -> list[dict[str, Any]] | None:
    try:
        threads = rest(port, "/v1/threads")
    except httpx.HTTPError:
        return None
    owned = sum(len(t["topic_partitions"]) for t in threads)
    ok = len(threads) == 2 and owned == 8 and {t["state"] for t in threads} == {"RUNNING"}
    return threads if ok else None


def children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def test_streamrt_run_sigterm_stops_children_and_static_restart_keeps_partitions(
    broker_factory, tmp_path: Path
) -> None:
    # Kafka's default initial delay: the two children's JoinGroups (released together, but
    # ~100 ms apart under load) form one generation, as two threads' do
    broker = broker_factory({"group.initial.rebalance.delay.ms": "3000"})
    create_topic(broker.bootstrap, "events", 8)
    create_topic(broker.bootstrap, "event-counts-out", 8)
    produce(broker.bootstrap, "events", events(320))
    port = free_port()
    proc = run_cli(broker.bootstrap, tmp_path, port)
    try:
        first = wait_until(lambda: threads_running(port), what="2 thread processes running")
        kids = children(proc.pid)
        assert len(kids) == 2
        # the parent lets both children join together: one rebalance, each thread's only
        # "revocation" is aiokafka's empty one before its first join
        assert [t["rebalances"] for t in first] == [1, 1]
        wait_until(lambda: counts(broker.bootstrap) == expected(320), what="exact counts")
        meta = rest(port, "/v1/metadata")
        assert [m["instance_id"] for m in meta] == ["proc"]
        assert meta[0]["group_instance_ids"] == ["proc-thread-1", "proc-thread-2"]
        assert meta[0]["application_server"] == f"127.0.0.1:{port}"
        assert rest(port, "/healthz")["state"] == "RUNNING"
        key = rest(port, "/v1/stores/event-counts/keys/k5")
        assert key["value"] == 20 and key["instance_id"] == "proc"
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        assert 'streamrt_records_processed_total{instance_id="proc",thread="proc-thread-2"}' in (
            metrics
        )
    finally:
        err = _stop(proc)
    assert proc.returncode == 0, err[-3000:]
    deadline = time.monotonic() + 10
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(k) for k in kids)
    assert "LeaveGroup" not in err
    # the children log as the parent does (json), one object per line
    child_lines = [line for line in err.splitlines() if "stream thread process running" in line]
    assert len(child_lines) == 2 and all(json.loads(line) for line in child_lines)
    gen_before = generations(broker.bootstrap)
    # static members: still in the group after the stop (no LeaveGroup) ...
    assert group_ids(broker.bootstrap) == ["proc-thread-1", "proc-thread-2"]

    # ... so a restart within session.timeout.ms gets the same partitions, no rebalance
    proc = run_cli(broker.bootstrap, tmp_path, port)
    try:
        again = wait_until(lambda: threads_running(port), what="running again")
        before = {t["group_instance_id"]: t["topic_partitions"] for t in first}
        assert {t["group_instance_id"]: t["topic_partitions"] for t in again} == before
        # the only "rebalance" each new thread counts is its own first join (aiokafka revokes
        # nothing before it); the group itself did not rebalance: same generation as before
        assert [t["rebalances"] for t in again] == [1, 1]
        wait_until(lambda: len(generations(broker.bootstrap)) >= len(gen_before) + 2, what="joins")
        rejoined = generations(broker.bootstrap)[len(gen_before) :]
        assert set(rejoined) == {gen_before[-1]}
        assert [t["records_restored"] for t in again] == [0, 0]
        produce(broker.bootstrap, "events", events(80, start=320))
        wait_until(lambda: counts(broker.bootstrap) == expected(400), what="counts after restart")
        kids = children(proc.pid)
        assert len(kids) == 2
        # a parent killed outright: its children see the socket close and stop by themselves
        proc.kill()
        wait_until(lambda: not any(_alive(k) for k in kids), timeout=30, what="orphans gone")
    finally:
        err = _stop(proc)


def test_a_thread_process_failing_on_a_record_backs_off_then_ends_in_error(
    broker, tmp_path: Path
) -> None:
    """The supervisor's rules hold for processes: the same record kills the child each time,
    the replacement waits 100 then 200 ms, and after errors.retry.max.attempts: ERROR."""
    from tests.runtime import poison_app

    create_topic(broker.bootstrap, "orders", 1)
    create_topic(broker.bootstrap, "doubled", 1)
    produce(broker.bootstrap, "orders", [(b"a", b'{"amount": 1}'), (b"p", b'{"x": 1}')])
    app = poison_app.make_app(
        {
            "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path),
            "stream.thread.mode": "process",
            "errors.retry.max.attempts": "2",
            "errors.retry.backoff.ms": "100",
            # the series resets after 4 x backoff.max quiet: 20 s, not 1.6 s, so a restart
            # slowed by a loaded machine still counts as the next attempt (backoffs 100, 200 ms)
            "errors.retry.backoff.max.ms": "5000",
            **FAST,
        }
    )
    app.app_spec = "tests.runtime.poison_app:app"
    events: list[dict[str, Any]] = []
    app.on_event(events.append)
    app.start()
    try:
        wait_until(lambda: app.state is AppState.ERROR, timeout=120, what="instance in ERROR")
        failed = [e["fields"] for e in events if e["type"] == "thread_failed"]
        assert [f["attempt"] for f in failed] == [1, 2, 3]
        assert [f["retry_in_ms"] for f in failed] == [100, 200, None]
        assert {f["key"] for f in failed} == {"record orders-0@1"}
        health = app.health()
        assert not health.healthy and health.state == "ERROR"
        assert health.reason is not None and "orders-0@1" in health.reason
        assert "KeyError" in health.reason
    finally:
        app.stop()
    assert app.state is AppState.ERROR
