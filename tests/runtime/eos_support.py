"""Helpers for the exactly-once tests and the EOS kill benchmark: read_committed reads, exact
counts, the counting app as a subprocess with ``processing.guarantee=exactly_once_v2``."""

from __future__ import annotations

import asyncio
import os
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

REPO = Path(__file__).resolve().parents[2]
# The record cache off: every update is emitted, so a count stream must be exactly 1..n.
EOS = {"processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": "0"}


def read_committed(bootstrap: str, topic: str) -> list[Any]:
    """Every committed record of ``topic`` (aborted ones skipped), partition/offset order."""

    async def go() -> list[Any]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            isolation_level="read_committed",
        )
        await consumer.start()
        try:
            await consumer._client.force_metadata_update()
            parts = consumer.partitions_for_topic(topic) or set()
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            if not tps:
                return []
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)  # the last stable offsets
            out: list[Any] = []
            while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
                for _tp, recs in (await consumer.getmany(timeout_ms=500)).items():
                    out.extend(recs)
            return sorted(out, key=lambda r: (r.partition, r.offset))
        finally:
            await consumer.stop()

    return asyncio.run(go())


def count_updates(bootstrap: str, topic: str = "event-counts-out") -> dict[str, list[int]]:
    """Per key, the sequence of counts emitted (committed only), in offset order."""
    out: dict[str, list[int]] = {}
    for r in read_committed(bootstrap, topic):
        out.setdefault(r.key.decode(), []).append(struct.unpack(">q", r.value)[0])
    return out


def exactness(updates: dict[str, list[int]], expected: dict[str, int]) -> tuple[int, int]:
    """(duplicates, missing) of a count stream: under exactly-once every key's emitted counts
    are exactly 1, 2, ..., n (each input counted once, none lost)."""
    duplicates = missing = 0
    for key, n in expected.items():
        seen = Counter(updates.get(key, []))
        duplicates += sum(c - 1 for c in seen.values() if c > 1)
        duplicates += sum(c for v, c in seen.items() if v > n)
        missing += sum(1 for v in range(1, n + 1) if v not in seen)
    return duplicates, missing


def run_counting_process(
    bootstrap: str,
    state: Path,
    instance: str,
    settings: dict[str, str],
    *,
    target: str = "tests.runtime.counting_app:app",
    environ: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """``streamrt run tests.runtime.counting_app:app`` (or ``target``) with ``settings`` as
    --config and ``environ`` added to the environment.

    stderr goes to ``<state>.<instance>.log`` (a pipe nobody drains would block the process
    once full); :func:`stderr_of` reads it."""
    args = [
        sys.executable,
        "-m",
        "streamrt.cli",
        "run",
        target,
        "--instance-id",
        instance,
        "--bootstrap-server",
        bootstrap,
        "--state-dir",
        str(state),
    ]
    for key, value in settings.items():
        args += ["--config", f"{key}={value}"]
    env = {**os.environ, **(environ or {}), "PYTHONPATH": str(REPO)}
    state.parent.mkdir(parents=True, exist_ok=True)
    with log_path(state, instance).open("a") as log:
        return subprocess.Popen(args, stderr=log, stdout=subprocess.DEVNULL, text=True, env=env)


def log_path(state: Path, instance: str) -> Path:
    return state.parent / f"{state.name}.{instance}.log"


def stderr_of(state: Path, instance: str) -> str:
    return log_path(state, instance).read_text()
