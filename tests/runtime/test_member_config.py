"""The stream thread's group member takes its settings from the streams config as Kafka's
consumer does."""

from __future__ import annotations

from streamrt.runtime import App
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.rebalance.own_membership import member_config


def _env(**settings: str) -> ThreadEnv:
    app = App({"application.id": "mc"})
    app.stream("in").to("out")
    config = StreamsConfig.from_mapping({"application.id": "mc", **settings})
    subs = tuple(app.topology.subtopologies("mc"))
    return ThreadEnv(config, app.topology, subs, "web-1", True, lambda *_a, **_k: None)


def test_the_rebalance_timeout_is_max_poll_interval_ms_as_kafkas_consumer_sends_it() -> None:
    """How long the coordinator waits for a live member to rejoin: Kafka's 5 minutes by
    default, not a few seconds (with 10 s, members a loaded machine kept from rejoining in time
    were removed from the group on Apache Kafka: UNKNOWN_MEMBER_ID, their tasks restored)."""
    assert member_config(_env(), "c", None).rebalance_timeout_ms == 300_000
    tuned = _env(**{"max.poll.interval.ms": "123456", "session.timeout.ms": "6000"})
    config = member_config(tuned, "c", "web-1-thread-1")
    assert (config.rebalance_timeout_ms, config.session_timeout_ms) == (123_456, 6000)
