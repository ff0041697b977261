"""bench/broker_cpu.py at a tiny size on the embedded broker (Apache Kafka is the `kafka`
suite's business): both clients' produce and fetch phases are measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow


def test_broker_cpu_measures_both_clients_both_phases(tmp_path: Path) -> None:
    out = tmp_path / "phases.json"
    args = ["--mb", "2", "--brokers", "streamrt", "--json", str(out)]
    printed = run_bench("broker_cpu.py", *args, cwd=tmp_path, timeout=180)
    phases = json.loads(out.read_text())["phases"]
    seen = {(p["client"], p["phase"]) for p in phases}
    assert seen == {(c, ph) for c in ("confluent-kafka", "aiokafka") for ph in ("produce", "fetch")}
    assert all(p["broker"] == "streamrt" and p["requests"] > 0 for p in phases)
    assert "idle CPU, streamrt" in printed
