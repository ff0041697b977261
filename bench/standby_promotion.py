"""Standby promotion, focused: the time from "this standby is now active" to its first commit.

A standby's StateManager (real RocksDB, one store) applies ``--records`` changelog records of
~2.3 KB (the sessions app's profiles) the way a standby does (``restore_batch``); then the task
is promoted, either

* ``reopen`` (main before issue 40): the standby closes its stores and the active task opens
  them again, or
* ``recycle``: the active task takes the open StateManager,

and the promoted task commits once (``flush``: on the branch, this also writes to files what
the standby wrote without the WAL). Timed: promotion + first commit, median of ``--rounds``.

    PYTHONPATH=. .venv/bin/python bench/standby_promotion.py --mode recycle
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from streamrt.state import ROCKS_DB, StateManager, TopicPartition

CHANGELOG = TopicPartition("app-profiles-changelog", 0)


def manager(directory: Path) -> StateManager:
    state = StateManager("0_0", directory)
    state.register("profiles", CHANGELOG, ROCKS_DB)
    return state


def one_round(root: Path, records: int, mode: str) -> float:
    directory = root / "app" / "0_0"
    standby = manager(directory)
    standby.open()
    value = b"x" * 2300
    for first in range(0, records, 1000):
        rows = [(f"u{o:08d}".encode(), value) for o in range(first, first + 1000)]
        standby.restore_batch(CHANGELOG, rows, first + 1000)
    began = time.perf_counter()
    if mode == "reopen":
        standby.close()
        active = manager(directory)
        active.open()
    else:
        active = standby
        active.positions()
    active.store("profiles").put(b"u00000000", b"y")
    active.flush({CHANGELOG: records + 1})  # the promoted task's first commit
    elapsed = time.perf_counter() - began
    active.close()
    shutil.rmtree(root / "app")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("reopen", "recycle"), required=True)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        times = [one_round(Path(tmp), args.records, args.mode) for _ in range(args.rounds)]
    ms = sorted(t * 1000 for t in times)
    print(
        f"{args.mode}: promotion + first commit, {args.records:,} records of 2.3 KB: "
        f"median {statistics.median(ms):.1f} ms (min {ms[0]:.1f}, max {ms[-1]:.1f}, "
        f"{args.rounds} rounds)"
    )


if __name__ == "__main__":
    main()
