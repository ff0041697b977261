"""A restore step's work after the fetch, without a broker: confluent-kafka messages (as the
restore consumer's ``consume`` hands them over) -> ``ChangelogBatch`` rows -> the timestamped
store's WriteBatches (``StateManager.restore_batch``). What moves here is the Python per
restored record and RocksDB's copy of it (issue 40 item 2: a full restore against a bare
librdkafka fetch of the same changelog). Records per CPU-second of the whole process
(RocksDB's background flushes included) and of the restoring thread alone.

    PYTHONPATH=<checkout> .venv/bin/python bench/restore_path.py [records] [rounds]
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Message

from streamrt.examples.session_profiles import add_click, new_profile
from streamrt.runtime.engine.clients.rdkafka_restore import _batch
from streamrt.state import ROCKS_DB, StateManager, TopicPartition

CHANGELOG = TopicPartition("bench-profiles-changelog", 0)
PER_FETCH = 25_000  # records per consume() call, as measured in a full restore


def messages(n: int) -> list[Message]:
    """``n`` changelog records of a ~2.3 KB session profile each, one user per record."""
    profile = new_profile()
    for i in range(5):
        add_click("u", {"page": f"/p/{i}", "ts": i}, profile)
    value = json.dumps(profile, separators=(",", ":"), sort_keys=True).encode()
    return [
        Message(
            topic=CHANGELOG.topic,
            partition=CHANGELOG.partition,
            offset=i,
            key=f"u{i:07d}".encode(),
            value=value,
            timestamp=(1, 1_700_000_000_000 + i),
        )
        for i in range(n)
    ]


def run(fetched: list[Message]) -> tuple[float, float]:
    directory = Path(tempfile.mkdtemp(prefix="restore-path-"))
    try:
        state = StateManager("0_0", directory / "0_0", lock=False)
        state.register("profiles", CHANGELOG, ROCKS_DB, timestamped=True)
        state.open()
        cpu, thread = time.process_time(), time.thread_time()
        for first in range(0, len(fetched), PER_FETCH):
            batch = _batch(fetched[first : first + PER_FETCH], None)
            assert batch is not None
            state.restore_batch(CHANGELOG, batch.rows, batch.next_offset)
        state.mark_restored(CHANGELOG, len(fetched))
        cpu, thread = time.process_time() - cpu, time.thread_time() - thread
        restored = sum(1 for _ in state.store("profiles").items())
        assert restored == len(fetched), f"{restored} of {len(fetched)} records restored"
        state.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return len(fetched) / cpu, len(fetched) / thread


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    fetched = messages(n)
    rates = [run(fetched) for _ in range(rounds)]
    for label, values in (("process", [r[0] for r in rates]), ("thread", [r[1] for r in rates])):
        print(
            f"{n} records x {rounds}, {label}: median {statistics.median(values):,.0f} records "
            f"per CPU-s ({min(values):,.0f}-{max(values):,.0f})"
        )


if __name__ == "__main__":
    main()
