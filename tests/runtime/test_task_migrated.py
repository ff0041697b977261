"""A zombie's commit must not lose state (issue 43): a stream thread paused past its session
timeout, its partitions counted on by another instance, then resumed mid-commit, must not
append its stale counts after the new owner's nor checkpoint its stores past them; when the
task comes back to it, no count has gone backwards. Two ``streamrt run`` processes with static
ids on the embedded broker; the pause is the process stopping itself (SIGSTOP) while it holds
its commit lock with records counted but not committed (tests/runtime/pausing_app.py)."""

from __future__ import annotations

import json
import signal
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.kafka_helpers import create_topic, produce, read_all, wait_until
from tests.runtime.eos_support import read_committed, run_counting_process

pytestmark = pytest.mark.slow

BROKER = {"group.min.session.timeout.ms": "1000"}
KEYS = 8


LOST = "tasks_migrated"


def events(n: int, start: int) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % KEYS}".encode(), b"e") for i in range(start, start + n)]


def expected(n: int) -> dict[str, int]:
    return dict(Counter(f"k{i % KEYS}" for i in range(n)))


def emitted(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """Per key, every count written to ``topic`` (output or changelog), in offset order;
    records of aborted transactions left out."""
    out: dict[str, list[int]] = {}
    for r in read_committed(bootstrap, topic):
        if r.value is not None:
            out.setdefault(r.key.decode(), []).append(struct.unpack(">q", r.value[-8:])[0])
    return out


def latest(bootstrap: str) -> dict[str, int]:
    return {k: v[-1] for k, v in emitted(bootstrap, "event-counts-out").items()}


def app_events(bootstrap: str, instance: str) -> list[dict]:
    found = (json.loads(r.value) for r in read_all(bootstrap, "counting-events"))
    return [e for e in found if e["instance_id"] == instance]


def has_event(bootstrap: str, instance: str, kind: str, **fields: str) -> bool:
    return any(
        e["type"] == kind and all(e["fields"].get(k) == v for k, v in fields.items())
        for e in app_events(bootstrap, instance)
    )


def stopped(proc: subprocess.Popen[str]) -> bool:
    """The process is stopped by a signal (``T`` in /proc/<pid>/stat)."""
    stat = Path(f"/proc/{proc.pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


def at_least(counts: dict[str, int], want: dict[str, int]) -> bool:
    return all(counts.get(k, 0) >= n for k, n in want.items())


@pytest.mark.parametrize(
    ("protocol", "guarantee"),
    [
        ("cooperative", "at_least_once"),
        ("eager", "at_least_once"),
        ("cooperative", "exactly_once_v2"),
    ],
)
def test_a_zombie_commit_loses_no_count(
    protocol: str, guarantee: str, broker_factory, tmp_path
) -> None:
    broker = broker_factory(BROKER)
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "events", 1)
    create_topic(bootstrap, "event-counts-out", 1)
    settings = {
        "session.timeout.ms": "4000",
        "heartbeat.interval.ms": "300",
        "commit.interval.ms": "300",
        "processing.guarantee": guarantee,
        **({"upgrade.from": "2.3"} if protocol == "eager" else {}),
    }

    def run(instance: str, **environ: str) -> subprocess.Popen[str]:
        state = tmp_path / instance
        return run_counting_process(
            bootstrap,
            state,
            instance,
            {"state.dir": str(state), "group.instance.id": instance, **settings},
            target="tests.runtime.pausing_app:app",
            environ=environ,
        )

    produce(bootstrap, "events", events(40, 0))
    zombie = run("a", PAUSING_APP_PAUSE="1")
    other: subprocess.Popen[str] | None = None
    try:
        wait_until(lambda: latest(bootstrap) == expected(40), what="a counts")
        other = run("b")
        wait_until(
            lambda: has_event(bootstrap, "b", "thread_state", new="RUNNING"), what="b joined"
        )
        # a counts these, then stops itself on "pause" before committing them
        produce(bootstrap, "events", [*events(40, 40), (b"pause", b"e")])
        wait_until(lambda: stopped(zombie), what="a paused")
        # a's session expires; b takes the task over, restores, counts them and more
        wait_until(lambda: at_least(latest(bootstrap), expected(80)), what="b took over")
        produce(bootstrap, "events", events(40, 80))
        wait_until(lambda: at_least(latest(bootstrap), expected(120)), what="b counts on")
        zombie.send_signal(signal.SIGCONT)  # its commit goes on: it is no owner any more
        wait_until(
            lambda: any(
                has_event(bootstrap, "a", e) for e in ("partitions_lost", "tasks_migrated")
            ),
            what="a lost its task",
        )
        other.send_signal(signal.SIGTERM)
        other.wait(30)
        # b's static membership expires: the task comes back to a, which restores it
        produce(bootstrap, "events", [*events(16, 120), (b"end", b"e")])
        wait_until(lambda: "end" in latest(bootstrap), what="a counted to the end")
    finally:
        for proc in (zombie, other):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)
    outputs = emitted(bootstrap, "event-counts-out")
    changelog = emitted(bootstrap, "counting-event-counts-changelog")
    final = {k: v[-1] for k, v in outputs.items()}
    restored = {k: v[-1] for k, v in changelog.items()}  # what any restore ends with
    backwards = {k: (final[k], max(v)) for k, v in outputs.items() if final[k] < max(v)}
    assert not backwards, f"counts went backwards (final, highest emitted): {backwards}"
    assert at_least(final, expected(136)), (final, expected(136))
    assert at_least(restored, final), (restored, final)
    if guarantee == "at_least_once":  # the resumed commit found out: TaskMigratedException
        assert has_event(bootstrap, "a", "tasks_migrated")
