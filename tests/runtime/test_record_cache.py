"""The record cache through the public DSL, on the embedded broker: with the cache on, repeated
updates to a key between commits reach the changelog and the sink once, with the same final
values; with it off (``statestore.cache.max.bytes=0`` or ``caching=False``), one output per
input; over budget, the cache flushes before the commit."""

from __future__ import annotations

import struct
from pathlib import Path

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until

KEYS = ["a", "b", "c"]
UPDATES = 10  # per key
EXPECTED = dict.fromkeys(KEYS, UPDATES)


def count_app(
    bootstrap: str, state_dir: Path, app_id: str, *, caching: bool = True, **settings: str
) -> App:
    app = App(
        {
            "application.id": app_id,
            "bootstrap.servers": bootstrap,
            "state.dir": str(state_dir),
            "commit.interval.ms": "1000",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
            **settings,
        }
    )
    (
        app.stream(f"{app_id}-in", key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="counts", caching=caching)
        .to_stream()
        .to(f"{app_id}-out", value_serde="int")
    )
    return app


def _counts(records: list) -> dict[str, int]:  # type: ignore[type-arg]
    return {k.decode(): struct.unpack(">q", v)[0] for k, v in latest_by_key(records).items()}


def _run(broker, tmp_path: Path, app_id: str, **kw) -> tuple[list, list]:  # type: ignore[no-untyped-def,type-arg]
    create_topic(broker.bootstrap, f"{app_id}-in", 1)
    create_topic(broker.bootstrap, f"{app_id}-out", 1)
    inputs = [(k.encode(), b"x") for _ in range(UPDATES) for k in KEYS]
    produce(broker.bootstrap, f"{app_id}-in", inputs)
    app = count_app(broker.bootstrap, tmp_path / "state", app_id, **kw)
    app.start()
    try:
        wait_until(
            lambda: _counts(read_all(broker.bootstrap, f"{app_id}-out")) == EXPECTED,
            what="final counts",
        )
    finally:
        app.stop()
    assert app.fatal_error is None
    out = read_all(broker.bootstrap, f"{app_id}-out")
    changelog = read_all(broker.bootstrap, f"{app_id}-counts-changelog")
    return out, changelog


def test_cache_on_merges_updates_per_key_between_commits(broker, tmp_path: Path) -> None:
    out, changelog = _run(broker, tmp_path, "cache-on")
    assert _counts(out) == _counts(changelog) == EXPECTED
    # 30 inputs, 3 keys: all inputs arrive in one poll before the first commit, so each
    # key's updates leave once per flush (at most one flush more if a poll was split).
    assert len(out) <= 2 * len(KEYS), [r.key for r in out]
    assert len(changelog) == len(out)


def test_cache_off_sends_one_output_per_input(broker, tmp_path: Path) -> None:
    out, changelog = _run(broker, tmp_path, "cache-off", **{"statestore.cache.max.bytes": "0"})
    assert _counts(out) == EXPECTED
    assert len(out) == len(changelog) == UPDATES * len(KEYS)
    assert [struct.unpack(">q", r.value)[0] for r in out if r.key == b"a"] == list(
        range(1, UPDATES + 1)
    )


def test_caching_false_opts_one_store_out(broker, tmp_path: Path) -> None:
    out, changelog = _run(broker, tmp_path, "store-opt-out", caching=False)
    assert _counts(out) == EXPECTED
    assert len(out) == len(changelog) == UPDATES * len(KEYS)


def test_a_full_cache_flushes_before_the_commit(broker, tmp_path: Path) -> None:
    """A budget of ~10 entries and no commit for 10 minutes: evictions flush the store, so
    output appears while the app runs; the final commit (on stop) flushes the rest."""
    app_id = "cache-evict"
    users = 200
    create_topic(broker.bootstrap, f"{app_id}-in", 1)
    create_topic(broker.bootstrap, f"{app_id}-out", 1)
    produce(broker.bootstrap, f"{app_id}-in", [(f"k{i}".encode(), b"x") for i in range(users)])
    app = count_app(
        broker.bootstrap,
        tmp_path / "state",
        app_id,
        **{"commit.interval.ms": "600000", "statestore.cache.max.bytes": "1000"},
    )
    app.start()
    try:
        seen = wait_until(
            lambda: len(read_all(broker.bootstrap, f"{app_id}-out")) >= users // 2,
            what="output flushed by evictions before any commit",
        )
        assert seen
    finally:
        app.stop()
    assert app.fatal_error is None
    out = read_all(broker.bootstrap, f"{app_id}-out")
    assert _counts(out) == {f"k{i}": 1 for i in range(users)}
    assert len(out) == users  # every key once: a flush never repeats a key it already sent
