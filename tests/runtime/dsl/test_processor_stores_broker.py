"""A processor-API store declared with ``Stores`` on the embedded broker (issue 38): with the
record cache on, ``range(from, to)`` sees the cached writes and includes ``to``; the store is
logged to its changelog and restored from it into a new state directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamrt.runtime import App, Processor, Stores
from tests.kafka_helpers import create_topic, produce, read_all, wait_until


class RangeReporter(Processor):
    """Puts each record; forwards the keys of ``range("b", "d")``, or of ``all()`` for "?"."""

    def process(self, key: Any, value: Any) -> None:
        store = self.context.get_store("kv")
        if key == "?":
            self.context.forward(key, ",".join(k for k, _ in store.all()))
            return
        store.put(key, value)
        self.context.forward(key, ",".join(k for k, _ in store.range("b", "d")))


def app(bootstrap: str, state: Path, app_id: str) -> App:
    a = App(
        {
            "application.id": app_id,
            "bootstrap.servers": bootstrap,
            "state.dir": str(state),
            "commit.interval.ms": "60000",  # writes stay in the record cache while processed
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
        }
    )
    kv = Stores.key_value_store_builder(Stores.persistent_key_value_store("kv"), "str", "str")
    a.add_state_store(kv.with_caching_enabled())
    stream = a.stream(f"{app_id}-in", key_serde="str", value_serde="str")
    stream.process(RangeReporter, "kv").to(f"{app_id}-out", key_serde="str", value_serde="str")
    return a


def outputs(bootstrap: str, topic: str) -> list[tuple[str, str]]:
    return [(r.key.decode(), r.value.decode()) for r in read_all(bootstrap, topic)]


def test_cached_processor_store_range_changelog_and_restore(broker, tmp_path: Path) -> None:
    bootstrap, app_id = broker.bootstrap, "procstore"
    for topic in (f"{app_id}-in", f"{app_id}-out"):
        create_topic(bootstrap, topic, 1)
    keys = ["c", "a", "d", "ba", "e", "b"]
    produce(bootstrap, f"{app_id}-in", [(k.encode(), k.upper().encode()) for k in keys])
    first = app(bootstrap, tmp_path / "state-1", app_id)
    first.start()
    try:
        wait_until(lambda: len(outputs(bootstrap, f"{app_id}-out")) == len(keys), what="outputs")
    finally:
        first.stop()
    assert first.fatal_error is None
    assert outputs(bootstrap, f"{app_id}-out") == [
        ("c", "c"),
        ("a", "c"),
        ("d", "c,d"),  # "d" is the upper bound: included
        ("ba", "ba,c,d"),
        ("e", "ba,c,d"),
        ("b", "b,ba,c,d"),
    ]
    changelog = read_all(bootstrap, f"{app_id}-kv-changelog")
    assert sorted(r.key.decode() for r in changelog) == sorted(keys)
    # a new state directory: the store comes back from its changelog
    produce(bootstrap, f"{app_id}-in", [(b"?", b"")])
    second = app(bootstrap, tmp_path / "state-2", app_id)
    second.start()
    try:
        wait_until(
            lambda: len(outputs(bootstrap, f"{app_id}-out")) == len(keys) + 1, what="the read"
        )
    finally:
        second.stop()
    assert second.fatal_error is None
    assert outputs(bootstrap, f"{app_id}-out")[-1] == ("?", "a,b,ba,c,d,e")
