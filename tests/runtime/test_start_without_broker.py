"""An instance started while its broker is down (restarting with it) waits for the broker
instead of exiting: found by the bounce test, where an instance restarted during a broker
SIGKILL died with ``Unable to bootstrap``."""

from __future__ import annotations

import signal
import struct
import time
from pathlib import Path

from bench._broker import free_port
from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until
from tests.runtime.eos_support import run_counting_process, stderr_of


def test_an_instance_started_before_its_broker_waits_for_it(tmp_path: Path) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    state = tmp_path / "state"
    proc = run_counting_process(bootstrap, state, "early", {"session.timeout.ms": "6000"})
    broker: BrokerThread | None = None
    try:
        # the instance tries, finds no broker, and must not give up (waited for by its log: a
        # loaded machine can take seconds just to start the interpreter)
        wait_until(
            lambda: "no broker reachable yet, retrying" in stderr_of(state, "early"),
            60,
            "the instance retrying without a broker",
        )
        time.sleep(1.0)
        assert proc.poll() is None, stderr_of(state, "early")
        broker = BrokerThread(
            tmp_path / "broker", {"group.initial.rebalance.delay.ms": "0"}, port=port
        ).start()
        create_topic(bootstrap, "events", 2)
        create_topic(bootstrap, "event-counts-out", 2)
        produce(bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])

        def counts() -> dict[str, int]:
            return {
                k.decode(): struct.unpack(">q", v)[0]
                for k, v in latest_by_key(read_all(bootstrap, "event-counts-out")).items()
            }

        wait_until(lambda: counts() == {f"k{i}": 10 for i in range(4)}, 90, "all counted")
        assert "no broker reachable yet, retrying" in stderr_of(state, "early")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        if broker is not None:
            broker.stop()
