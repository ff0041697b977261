"""Hand-off between two real processes of one instance (issue 17): happy path and bad cases.

Embedded broker (with its metrics), real ``streamrt run`` processes, real RocksDB; the
lifecycle is read from the ``<application.id>-events`` topic and the processes' JSON logs.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from streamrt.deploy.report import count_rebalances, count_restores
from streamrt.runtime.instance.handoff import ping, socket_path
from tests.handoff.support import (
    APP_ID,
    broker_rebalances,
    counts,
    expected,
    instance,
    now,
    send,
    since,
    wait_counts,
    wait_log,
    wait_running,
)
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.slow


def test_handoff_takes_over_without_rebalance_or_restore(tmp_path: Path) -> None:
    with instance(tmp_path) as (inst, tail, metrics):
        old = inst.spawn()
        wait_running(tail, old)
        send(inst.bootstrap, 400)
        wait_counts(inst.bootstrap, 400)
        before = broker_rebalances(metrics)
        t0 = now()
        new = inst.spawn(handoff=True)
        assert old.wait(90) == 0, old.text()
        wait_running(tail, new)
        send(inst.bootstrap, 400, start=400)
        wait_counts(inst.bootstrap, 800)  # exact: nothing lost, nothing counted twice
        assert broker_rebalances(metrics) == before  # the coordinator agrees: no rebalance
        assert count_rebalances(tail.events(), t0) == (0, [])
        assert count_restores(tail.events(), t0) == (0, 0)
        assert "hand-off: took over" in new.text()
        assert "hand-off: released to the successor" in old.text()
        released = since(tail, t0, "handoff_released")
        assert [e["pid"] for e in released] == [old.pid]
        # The order of the timeline: the successor's threads had their clients up and the
        # coordinator found before it asked; the old one answered after each thread's final
        # commit; the successor's threads joined only then.
        marks = {
            (e["pid"], e["thread"], e["fields"]["mark"]): e["ts"]
            for e in since(tail, t0, "timeline")
        }
        stopping = since(tail, t0, "handoff_stopping")[0]["ts"]
        for thread in (1, 2):
            assert marks[(new.pid, thread, "prepared")] <= stopping
            assert marks[(old.pid, thread, "committed")] <= released[0]["ts"]
            assert marks[(new.pid, thread, "join_requested")] >= released[0]["ts"]
            assert (new.pid, thread, "first_record") in marks
        assert ping(socket_path(inst.work / "state" / APP_ID))["pid"] == new.pid
        assert new.alive()


def test_handoff_under_exactly_once_counts_each_event_once(tmp_path: Path) -> None:
    """The successor starts its transactional producer only once released (its InitProducerId
    fences the old one's transactional id), so the old one's last transaction commits first."""
    eos = ["--config", "processing.guarantee=exactly_once_v2"]
    with instance(tmp_path, extra=eos) as (inst, tail, metrics):
        old = inst.spawn()
        wait_running(tail, old)
        send(inst.bootstrap, 300)
        wait_counts(inst.bootstrap, 300)
        before = broker_rebalances(metrics)
        t0 = now()
        new = inst.spawn(handoff=True)
        assert old.wait(90) == 0, old.text()
        wait_running(tail, new)
        send(inst.bootstrap, 300, start=300)
        wait_counts(inst.bootstrap, 600)  # exact: nothing lost, nothing counted twice
        assert broker_rebalances(metrics) == before
        assert count_rebalances(tail.events(), t0) == (0, [])
        assert "hand-off: took over" in new.text()
        assert not since(tail, t0, "fenced")  # the old one stopped, it was not fenced
        assert new.alive()


def test_successor_crashing_during_startup_leaves_the_old_one_processing(tmp_path: Path) -> None:
    with instance(tmp_path) as (inst, tail, _metrics):
        old = inst.spawn()
        wait_running(tail, old)
        send(inst.bootstrap, 200)
        wait_counts(inst.bootstrap, 200)
        inst.mode_file.write_text("crash")  # the "new code" fails at import
        crashed = inst.spawn(handoff=True)
        assert crashed.wait(60) != 0
        assert "simulated crash during start-up" in crashed.text()
        assert old.alive()
        send(inst.bootstrap, 200, start=200)
        wait_counts(inst.bootstrap, 400)  # still processing, nothing lost
        assert "hand-off accepted" not in old.text()
        # the same through SIGHUP: the reload's successor crashes, the instance keeps running
        old.popen.send_signal(signal.SIGHUP)
        wait_log(old, "the successor exited before taking over; this instance keeps running")
        send(inst.bootstrap, 200, start=400)
        wait_counts(inst.bootstrap, 600)
        assert old.alive()


def test_successor_with_another_topology_is_refused(tmp_path: Path) -> None:
    with instance(tmp_path) as (inst, tail, _metrics):
        old = inst.spawn()
        wait_running(tail, old)
        inst.mode_file.write_text("v2")  # the successor's topology has one more node
        refused = inst.spawn(handoff=True)
        assert refused.wait(60) == 1
        assert "hand-off refused" in refused.text()
        assert "another topology" in refused.text()
        assert "hand-off refused" in old.text()  # both logs say what happened
        assert old.alive()
        send(inst.bootstrap, 300)
        wait_counts(inst.bootstrap, 300)
        inst.mode_file.write_text("")
        assert ping(socket_path(inst.work / "state" / APP_ID))["handoff"] == "SERVING"


def test_two_successors_race_one_wins_the_other_gets_a_clear_error(tmp_path: Path) -> None:
    with instance(tmp_path) as (inst, tail, metrics):
        inst.mode_file.write_text("slow")  # each record takes 10 ms: the old one stops slowly
        old = inst.spawn()
        wait_running(tail, old)
        send(inst.bootstrap, 100)
        wait_counts(inst.bootstrap, 100)
        before = broker_rebalances(metrics)
        # the old process holds the record in hand until the loser has lost: however far
        # apart the two start on a loaded machine, the first one's hand-off is still under way
        # when the second asks (else the second would simply take over from the first)
        inst.hold_file.touch()
        send(inst.bootstrap, 500, start=100)
        racers = [inst.spawn(handoff=True), inst.spawn(handoff=True)]
        wait_until(lambda: any(not r.alive() for r in racers), 90, "a loser exits", 0.1)
        loser = next(r for r in racers if not r.alive())
        winner = next(r for r in racers if r is not loser)
        inst.hold_file.unlink()
        assert loser.wait() == 1
        assert "already taking over" in loser.text(), loser.text()
        assert old.wait(90) == 0
        wait_running(tail, winner)
        wait_counts(inst.bootstrap, 600, timeout=120)
        assert winner.alive()
        assert broker_rebalances(metrics) == before


def test_old_instance_killed_mid_handoff_successor_falls_back(tmp_path: Path) -> None:
    with instance(tmp_path) as (inst, tail, _metrics):
        inst.mode_file.write_text("slow")
        old = inst.spawn()
        wait_running(tail, old)
        send(inst.bootstrap, 100)
        wait_counts(inst.bootstrap, 100)
        # Feed faster than the slow app processes until the kill, so the old process is in the
        # middle of a batch when the successor asks, however long the successor takes to
        # start: its stop then waits for the batch, and the kill lands between "accepted"
        # and "released". (A fixed backlog could be drained by then, and an idle old process
        # releases in a few ms, before the kill: that hand-off simply succeeds.) About twice the
        # slow app's 100 records/s, and bounded: on a loaded machine the successor can take 20 s
        # to ask, and an unbounded feed left more backlog than the successor could count in time.
        feeding, fed = threading.Event(), [100]

        def feed() -> None:
            while not feeding.is_set() and fed[0] < 4_000:
                send(inst.bootstrap, 10, start=fed[0])
                fed[0] += 10
                feeding.wait(0.05)

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        t0 = now()
        try:
            new = inst.spawn(handoff=True)
            wait_log(old, "hand-off accepted")
            old.popen.send_signal(signal.SIGKILL)  # between "accepted" and "released"
            old.wait(10)
        finally:
            feeding.set()
            feeder.join(30)
        fell_back = "hand-off interrupted: falling back to an ordinary start"
        outcome = wait_until(
            lambda: next((t for t in (fell_back, "hand-off: took over") if t in new.text()), None),
            60,
            "the successor's outcome",
            0.02,
        )
        assert outcome == fell_back, "the old process released before the kill"
        wait_running(tail, new)
        total = fed[0]
        wait_until(lambda: _at_least(counts(inst.bootstrap), expected(total)), 120, "all counted")
        assert new.alive()
        records, _size = count_restores(tail.events(), t0)
        assert records < total  # one changelog update per event at most: only the tail restored


def _at_least(got: dict[str, int], want: dict[str, int]) -> bool:
    """At-least-once after a kill: every event counted, some maybe twice."""
    return set(got) == set(want) and all(got[k] >= n for k, n in want.items())


def test_reload_through_sighup_and_rest(tmp_path: Path) -> None:
    import socket as socket_mod

    from streamrt.cli import main as cli_main

    with socket_mod.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extra = ["--application-server", f"127.0.0.1:{port}", "--config", "rest.auth.token=sesame"]
    with instance(tmp_path, extra=extra) as (inst, tail, metrics):
        old = inst.spawn()
        wait_running(tail, old)
        before = broker_rebalances(metrics)
        t0 = now()
        old.popen.send_signal(signal.SIGHUP)
        assert old.wait(90) == 0
        sock = socket_path(inst.work / "state" / APP_ID)
        first = wait_until(lambda: _pid_serving(sock, old.pid), 90, "successor serving")
        url = f"http://127.0.0.1:{port}"
        assert cli_main(["instances", "reload", "--url", url]) == 1  # no token: refused
        wait_until(lambda: _http_ok(url), 60, "REST up")
        assert cli_main(["instances", "reload", "--url", url, "--token", "sesame"]) == 0
        second = wait_until(lambda: _pid_serving(sock, first), 90, "second successor serving")
        send(inst.bootstrap, 300)
        wait_counts(inst.bootstrap, 300)
        assert broker_rebalances(metrics) == before
        assert count_rebalances(tail.events(), t0) == (0, [])
        assert count_restores(tail.events(), t0) == (0, 0)
        assert tail.is_running(second, 2)
        os.kill(second, signal.SIGTERM)
        wait_until(lambda: not _exists(second), 60, "last successor exited")


def _exists(pid: int) -> bool:
    """Alive and not a zombie (a SIGHUP successor's parent exited: init reaps it, maybe late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _pid_serving(sock: Path, not_pid: int) -> int | None:
    try:
        answer = ping(sock)
    except Exception:
        return None
    pid = answer.get("pid")
    return pid if pid != not_pid and answer.get("state") == "RUNNING" else None


def _http_ok(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url + "/healthz", timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


def test_handoff_with_stream_thread_processes_is_refused_up_front(tmp_path: Path) -> None:
    """Process mode has no hand-off (the children's commit and store close are not relayed):
    the successor says so and exits 2 before it connects, the running one keeps processing."""
    extra = ["--config", "stream.thread.mode=process"]
    with instance(tmp_path, extra=extra) as (inst, tail, _metrics):
        old = inst.spawn()
        wait_running(tail, old)
        new = inst.spawn(handoff=True)
        assert new.wait(60) == 2, new.text()
        assert "--handoff is not supported with stream.thread.mode=process" in new.text()
        assert not socket_path(inst.work / "state" / APP_ID).exists()  # none offered
        send(inst.bootstrap, 50)
        wait_counts(inst.bootstrap, 50)
        assert old.alive()
