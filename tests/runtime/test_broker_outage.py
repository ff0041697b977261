"""A stream thread rides out a broker outage: a commit that finds no broker is retried with
the next one (Kafka Streams retries a commit that timed out), and a thread that starts while
the broker is down waits for it. Before, the bounce test saw a thread die on
``NoBrokerAvailableError`` from its offset commit and its replacements die on ``Unable to
bootstrap`` until the instance went to ERROR."""

from __future__ import annotations

import signal
import struct
import time
from pathlib import Path

from bench._broker import free_port
from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until
from tests.runtime.eos_support import run_counting_process, stderr_of

BROKER = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}


def _counts(bootstrap: str) -> dict[str, int]:
    return {
        k.decode(): struct.unpack(">q", v)[0]
        for k, v in latest_by_key(read_all(bootstrap, "event-counts-out")).items()
    }


def test_a_thread_keeps_running_through_a_broker_outage(tmp_path: Path) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    broker = BrokerThread(tmp_path / "broker", BROKER, port=port).start()
    state = tmp_path / "state"
    settings = {"session.timeout.ms": "30000", "commit.interval.ms": "200"}
    proc = run_counting_process(bootstrap, state, "steady", settings)
    try:
        create_topic(bootstrap, "events", 2)
        create_topic(bootstrap, "event-counts-out", 2)
        produce(bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])
        wait_until(lambda: _counts(bootstrap) == {f"k{i}": 10 for i in range(4)}, 90, "counted")
        broker.stop()
        time.sleep(6.0)  # many commit intervals with no broker
        assert proc.poll() is None, stderr_of(state, "steady")
        broker = BrokerThread(tmp_path / "broker", BROKER, port=port).start()
        produce(bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])
        # at-least-once: nothing lost (a count at least what went in)
        wait_until(
            lambda: all(_counts(bootstrap).get(f"k{i}", 0) >= 20 for i in range(4)),
            90,
            "counted after the outage",
        )
        log = stderr_of(state, "steady")
        assert "stream thread died" not in log, log[-3000:]
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        broker.stop()
