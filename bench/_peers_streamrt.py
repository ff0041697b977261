"""streamrt contender of ``bench/peers_throughput.py``: one instance (process) of one workload.

Configured by environment (set by the harness): ``PEERS_WORKLOAD``, ``PEERS_BOOTSTRAP``,
``PEERS_IN``, ``PEERS_OUT``, ``PEERS_APP_ID``, ``PEERS_THREADS``, ``PEERS_STATE_DIR``,
``PEERS_CONFIG`` (a JSON object of extra streamrt settings).

Levers, measured without touching ``streamrt/runtime`` (the harness's own monkeypatches):
``PEERS_PRODUCER`` (a JSON object of AIOKafkaProducer keyword arguments that replace the
runtime's, e.g. ``{"max_batch_size": 1048576, "linger_ms": 20}``) and ``PEERS_JSON=orjson``
(streamrt's JSON serde backed by orjson, same compact sorted bytes for ASCII documents).
``PEERS_CPROFILE=path`` dumps a cProfile of the first stream thread to ``path`` on exit.

``stream.thread.mode=process`` (in ``PEERS_CONFIG``): each stream thread process imports this
module's ``app`` (built on first access, with the same levers), as ``_peers_streamrt:app``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

ENV = os.environ.get


def patch_producer(overrides: dict[str, Any]) -> None:
    import aiokafka

    original = aiokafka.AIOKafkaProducer.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.update(overrides)
        original(self, *args, **kwargs)

    aiokafka.AIOKafkaProducer.__init__ = init  # type: ignore[method-assign]


def patch_orjson() -> None:
    import orjson

    from streamrt import serde

    def serialize(self: Any, value: Any) -> bytes | None:
        return None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    def deserialize(self: Any, data: bytes | None) -> Any:
        return None if data is None else orjson.loads(data)

    serde.JsonSerde.serialize = serialize  # type: ignore[method-assign]
    serde.JsonSerde.deserialize = deserialize  # type: ignore[method-assign]


def patch_cprofile(path: str) -> None:
    """Profile every stream thread's run(); the first one to finish writes ``path``."""
    import cProfile
    import threading

    original = threading.Thread.run
    written: list[bool] = []

    def run(self: threading.Thread) -> None:
        if "thread" not in self.name.lower() and "stream" not in self.name.lower():
            original(self)
            return
        prof = cProfile.Profile()
        prof.enable()
        try:
            original(self)
        finally:
            prof.disable()
            if not written:
                written.append(True)
                prof.dump_stats(path)

    threading.Thread.run = run  # type: ignore[method-assign]


def build() -> Any:
    from _peers_workloads import stateless_keep, stateless_map, words

    from streamrt.deploy.session_profiles import add_click, new_profile
    from streamrt.runtime import App

    workload = ENV("PEERS_WORKLOAD", "stateless")
    src, sink = ENV("PEERS_IN", "in"), ENV("PEERS_OUT", "out")
    app = App({"application.id": ENV("PEERS_APP_ID", "peers")})
    if workload == "stateless":
        (
            app.stream(src, key_serde="str", value_serde="json")
            .filter(lambda _k, v: stateless_keep(v))
            .map_values(stateless_map)
            .to(sink)
        )
    elif workload == "wordcount":
        (
            app.stream(src, key_serde="str", value_serde="str")
            .flat_map(lambda _k, line: [(w, w) for w in words(line)])
            .group_by_key(name="words")
            .count(store="counts")
            .to_stream()
            .to(sink, value_serde="json")
        )
    else:
        (
            app.stream(src, key_serde="str", value_serde="json")
            .group_by_key()
            .aggregate(new_profile, add_click, store="profiles")
            .to_stream()
            .to(sink, value_serde="json")
        )
    settings = {
        "bootstrap.servers": ENV("PEERS_BOOTSTRAP"),
        "num.stream.threads": int(ENV("PEERS_THREADS", "1")),
        "state.dir": ENV("PEERS_STATE_DIR", "state"),
    }
    settings["statestore.cache.max.bytes"] = 0  # one output per input, as the harness counts
    settings.update(json.loads(ENV("PEERS_CONFIG", "{}")))
    app.configure(settings)
    return app


def apply_levers() -> None:
    if ENV("PEERS_PRODUCER"):
        patch_producer(json.loads(ENV("PEERS_PRODUCER", "{}")))
    if ENV("PEERS_JSON") == "orjson":
        patch_orjson()
    if ENV("PEERS_CPROFILE"):
        patch_cprofile(ENV("PEERS_CPROFILE", "profile.out"))


_built: list[Any] = []


def __getattr__(name: str) -> Any:
    """``_peers_streamrt:app`` for a stream thread process: the levers, then the app."""
    if name != "app":
        raise AttributeError(name)
    if not _built:
        apply_levers()
        _built.append(build())
    return _built[0]


def main() -> int:
    apply_levers()
    app = build()
    app.app_spec = "_peers_streamrt:app"  # stream.thread.mode=process: children import it
    return int(app.run())


if __name__ == "__main__":
    sys.exit(main())
