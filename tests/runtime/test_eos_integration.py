"""Exactly-once v2 end to end: exact output across a clean bounce, SIGKILLs and a zombie;
aborted transactions leave no trace in the stores. Embedded broker, real aiokafka, RocksDB."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from streamrt.state.checkpoint import CHECKPOINT_HINT, read_checkpoint_hint
from tests.kafka_helpers import create_topic, produce, read_all, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.eos_support import (
    EOS,
    count_updates,
    exactness,
    read_committed,
    run_counting_process,
    stderr_of,
)

pytestmark = pytest.mark.slow

BROKER = {"group.min.session.timeout.ms": "1000"}
SESSION = {"session.timeout.ms": "8000", "heartbeat.interval.ms": "500", **EOS}


def events(n: int, keys: int = 16, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % keys}".encode(), b"e") for i in range(start, start + n)]


def expected(n: int, keys: int = 16) -> dict[str, int]:
    return dict(Counter(f"k{i % keys}" for i in range(n)))


def settings(bootstrap: str, state: Path, instance: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": instance,
        **SESSION,
    }


def exact(bootstrap: str, n: int) -> bool:
    return exactness(count_updates(bootstrap), expected(n)) == (0, 0)


def latest(bootstrap: str) -> dict[str, int]:
    return {k: v[-1] for k, v in count_updates(bootstrap).items()}


def wait_for_counts(bootstrap: str, n: int, what: str, events: list[dict] | None = None) -> None:
    """Wait until the latest count per key is exact for the first ``n`` events; on a timeout
    the message says what the output held and what the app last did (a bare False did not)."""
    try:
        wait_until(lambda: latest(bootstrap) == expected(n), what=what)
    except AssertionError as exc:
        got = latest(bootstrap)
        wrong = {k: (got.get(k), v) for k, v in expected(n).items() if got.get(k) != v}
        last = [(e["type"], e.get("fields")) for e in (events or [])[-15:]]
        raise AssertionError(f"{exc}; keys off (got, want): {wrong}; last events: {last}") from exc


def setup(bootstrap: str, partitions: int = 2) -> None:
    create_topic(bootstrap, "events", partitions)
    create_topic(bootstrap, "event-counts-out", partitions)


def test_clean_bounce_keeps_the_output_exact(broker_factory, tmp_path) -> None:
    broker = broker_factory(BROKER)
    setup(broker.bootstrap)
    produce(broker.bootstrap, "events", events(200))
    app = make_app(settings(broker.bootstrap, tmp_path / "s", "bounce"))
    app.start()
    try:
        wait_for_counts(broker.bootstrap, 200, "first counts")
    finally:
        app.stop()
    app = make_app(settings(broker.bootstrap, tmp_path / "s", "bounce"))
    app.start()
    try:
        produce(broker.bootstrap, "events", events(100, start=200))
        wait_for_counts(broker.bootstrap, 300, "counts after bounce")
        assert exactness(count_updates(broker.bootstrap), expected(300)) == (0, 0)
        assert app.metadata_for_local_threads()[0].records_restored == 0
    finally:
        app.stop()
    # The output and the changelog were written in transactions: every data record is
    # followed by a commit marker (read_uncommitted sees the same data, no aborted extra).
    assert len(read_all(broker.bootstrap, "event-counts-out")) == 300


class SlowProducer:
    """Produces ``k<i>`` events in small acked batches from a thread, so kills land mid-stream."""

    def __init__(self, bootstrap: str, batch: int = 20, pause: float = 0.05) -> None:
        import threading

        self.bootstrap, self.batch, self.pause = bootstrap, batch, pause
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            produce(self.bootstrap, "events", events(self.batch, start=self.sent))
            self.sent += self.batch
            self._stop.wait(self.pause)

    def __enter__(self) -> SlowProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


def checkpointed(state: Path) -> dict[str, dict[str, int]]:
    """Task directory → the offsets in its checkpoint hint, for the tasks that have flushed."""
    return {
        hint.parent.name: offsets
        for hint in state.rglob(CHECKPOINT_HINT)
        if (offsets := read_checkpoint_hint(hint.parent)) and all(offsets.values())
    }


def restore_events(bootstrap: str, instance: str) -> list[dict]:
    out = []
    for r in read_all(bootstrap, "counting-events"):
        event = json.loads(r.value)
        if event["instance_id"] == instance and event["type"].startswith("restore_"):
            out.append(event)
    return out


def test_sigkill_mid_stream_keeps_the_output_exact_and_restores_only_the_tail(
    broker_factory, tmp_path
) -> None:
    broker = broker_factory(BROKER)
    setup(broker.bootstrap)
    state = tmp_path / "s"
    proc_settings = {k: v for k, v in SESSION.items()}
    kills = 3
    with SlowProducer(broker.bootstrap) as feed:
        for _ in range(kills):
            proc = run_counting_process(broker.bootstrap, state, "crashy", proc_settings)
            try:
                done = sum(latest(broker.bootstrap).values())
                wait_until(
                    lambda d=done: sum(latest(broker.bootstrap).values()) >= d + 100,  # type: ignore[misc]
                    what="progress before the kill",
                )
                # both tasks have flushed once: a restart has a checkpoint to restore from
                wait_until(lambda: len(checkpointed(state)) == 2, what="a checkpoint per task")
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(30)
        total_before_final = feed.sent
    total = feed.sent
    assert total >= total_before_final
    proc = run_counting_process(broker.bootstrap, state, "crashy", proc_settings)
    try:
        wait_for_counts(broker.bootstrap, total, "all counted")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    duplicates, missing = exactness(count_updates(broker.bootstrap), expected(total))
    assert (duplicates, missing) == (0, 0)
    changelog = len(read_committed(broker.bootstrap, "counting-event-counts-changelog"))
    assert changelog == total
    # No wipe: each restart restored from its store's checkpoint (the offset flushed with the
    # last commit), never from the beginning, and only the records between there and the end
    # (aborted records in that range are skipped). How long that tail is depends on where the
    # kill fell, so it is bounded by the offsets, not by a fraction of the changelog.
    restores = restore_events(broker.bootstrap, "crashy")
    # Per process and task, restores in order; a SIGKILL can land mid-restore, so a process
    # that was killed may end with one restore started and never completed; the last process
    # (SIGTERM) completes every restore it starts.
    runs: dict[tuple[int, str], list[dict]] = {}
    for e in restores:
        if e["type"] not in ("restore_started", "restore_complete"):
            continue
        runs.setdefault((e["pid"], e["fields"]["task"]), []).append(e)
    for (pid, task), events in runs.items():
        kinds = [e["type"] for e in events]
        pairs = len(kinds) // 2
        assert kinds[: 2 * pairs] == ["restore_started", "restore_complete"] * pairs, kinds
        if len(kinds) % 2:
            assert kinds[-1] == "restore_started" and pid != proc.pid, (pid, task, kinds)
        for k in range(pairs):
            begun, done = events[2 * k]["fields"], events[2 * k + 1]["fields"]
            assert all(position for position in begun["from"].values()), begun
            tail = sum(end - begun["from"][tp] for tp, end in begun["to"].items())
            assert done["records"] <= tail, (begun, done)


def test_a_second_process_with_the_same_instance_id_fences_the_first(
    broker_factory, tmp_path
) -> None:
    broker = broker_factory(BROKER)
    setup(broker.bootstrap)
    with SlowProducer(broker.bootstrap) as feed:
        first = run_counting_process(broker.bootstrap, tmp_path / "one", "twin", dict(SESSION))
        try:
            wait_until(lambda: sum(latest(broker.bootstrap).values()) >= 100, what="first runs")
            second = run_counting_process(broker.bootstrap, tmp_path / "two", "twin", dict(SESSION))
            try:
                wait_until(lambda: first.poll() is not None, what="the stale process stops")
                assert first.returncode != 0
                assert "FENCED_INSTANCE_ID" in stderr_of(tmp_path / "one", "twin")
                done = sum(latest(broker.bootstrap).values())
                wait_until(
                    lambda: sum(latest(broker.bootstrap).values()) >= done + 100,
                    what="the new incarnation runs",
                )
                feed.__exit__()
                wait_until(
                    lambda: latest(broker.bootstrap) == expected(feed.sent), what="all counted"
                )
            finally:
                second.send_signal(signal.SIGTERM)
                second.wait(30)
        finally:
            first.kill()
            first.wait(30)
    assert exactness(count_updates(broker.bootstrap), expected(feed.sent)) == (0, 0)


def test_a_fenced_producer_loses_its_transaction_and_the_thread_recovers(
    broker_factory, tmp_path
) -> None:
    """An outside producer takes the thread's transactional.id: the open transaction is
    aborted, its staged store writes are discarded, the thread re-creates its producer and
    re-reads from the committed offsets, and the output stays exact."""
    import asyncio

    from aiokafka import AIOKafkaProducer

    broker = broker_factory(BROKER)
    setup(broker.bootstrap)
    produce(broker.bootstrap, "events", events(100))
    app = make_app(
        settings(broker.bootstrap, tmp_path / "s", "solo") | {"commit.interval.ms": "1000"}
    )
    seen: list[dict] = []
    app.on_event(seen.append)
    app.start()
    try:
        wait_for_counts(broker.bootstrap, 100, "first counts", seen)
        txn_id = "counting-solo-thread-1"  # <application.id>-<thread instance id>

        async def fence() -> None:
            intruder = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id)
            await intruder.start()  # InitProducerId bumps the epoch: the thread is fenced
            await intruder.stop()

        produce(broker.bootstrap, "events", events(50, start=100))
        asyncio.run(fence())
        produce(broker.bootstrap, "events", events(50, start=150))
        wait_until(lambda: any(e["type"] == "tasks_lost" for e in seen), what="tasks lost")
        wait_for_counts(broker.bootstrap, 200, "counts after fence", seen)
        assert exactness(count_updates(broker.bootstrap), expected(200)) == (0, 0)
        assert app.state.name == "RUNNING"
    finally:
        app.stop()


def test_a_record_at_timestamp_zero_is_refused_by_name_and_nothing_of_it_is_committed(
    broker, tmp_path: Path
) -> None:
    """librdkafka cannot write CreateTime 0 in a transaction (it stamps 0 as "now"), and a side
    producer would be outside it: under exactly_once_v2 such a record fails as that record
    (topic, partition, offset), backs off, ends in ERROR, and nothing of it is committed."""
    from streamrt.runtime import AppState
    from tests.runtime import poison_app

    create_topic(broker.bootstrap, "orders", 1, **{"retention.ms": "-1"})  # keeps 1970
    create_topic(broker.bootstrap, "doubled", 1)
    orders = [(b"a", b'{"amount": 1}'), (b"z", b'{"amount": 5}'), (b"c", b'{"amount": 3}')]
    now = int(time.time() * 1000)
    produce(broker.bootstrap, "orders", orders, timestamps=[now, 0, now])
    settings = {
        "bootstrap.servers": broker.bootstrap,
        "state.dir": str(tmp_path),
        "processing.guarantee": "exactly_once_v2",
        "errors.retry.max.attempts": "1",
        "errors.retry.backoff.ms": "100",
        "errors.retry.backoff.max.ms": "5000",
    }
    events: list[dict] = []
    app = poison_app.make_app(settings)
    app.on_event(events.append)
    app.start()
    try:
        try:
            wait_until(lambda: app.state is AppState.ERROR, what="instance in ERROR")
        except AssertionError:
            raise AssertionError([(e["type"], e["fields"]) for e in events]) from None
        failed = [e["fields"] for e in events if e["type"] == "thread_failed"]
        assert {f["key"] for f in failed} == {"record orders-0@1"}
        reason = app.health().reason or ""
        assert "orders-0@1" in reason and "a record for doubled has timestamp 0" in reason
    finally:
        app.stop()
    committed = read_committed(broker.bootstrap, "doubled")
    assert b"z" not in [r.key for r in committed]
    assert all(r.timestamp != 0 for r in committed)
