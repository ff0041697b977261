"""bench/broker_throughput.py at a tiny size: every client and acks row produces and fetches all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow


def test_broker_throughput_runs_every_client_and_acks(tmp_path: Path) -> None:
    out = tmp_path / "broker_throughput.json"
    args = ["--records", "2000", "--json", str(out)]
    printed = run_bench("broker_throughput.py", *args, cwd=tmp_path)
    result = json.loads(out.read_text())
    # the script fetches until it has every produced record, so a row means all 2,000 came back
    rows = {(r["client"], r["acks"]) for r in result["rows"]}
    assert rows == {(c, a) for c in ("confluent", "aiokafka") for a in ("1", "all")}
    assert all(r["produce_rps"] > 0 and r["fetch_rps"] > 0 for r in result["rows"])
    assert result["sink_MBps"] > 0
    assert "raw asyncio socket sink" in printed
