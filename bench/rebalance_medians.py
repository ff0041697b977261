"""Medians and spread over several runs of ``bench/rebalance_cooperative.py``.

One run measures each (scenario, protocol, contender) once, and a rebalance's gaps hang on
when a heartbeat happens to fall: a single figure can be luck either way. This reads the
``rebalance_cooperative.json`` of several runs (the ``--out`` of each) and prints the table of
one run with every figure as the median and, in brackets, the range (min-max) over the runs.
A run whose output was not exact (lost or duplicated records) counts in neither: it is listed
under the table.

    python bench/rebalance_medians.py /tmp/rebal-apache-1 /tmp/rebal-apache-2 /tmp/rebal-apache-3
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

KEY = ("scenario", "protocol", "contender")
# (column, field, decimals); the uncommitted pair shares one column, as in one run's table
COLUMNS = (
    ("gap before s", "gap_before_s", 2),
    ("gap kept s", "gap_kept_s", 2),
    ("gap moved s", "gap_moved_s", 2),
    ("moved", "moved", 0),
    ("restored", "restored", 0),
    ("generations", "generations", 0),
    ("balanced s", "balanced_s", 2),
    ("uncommitted gap before s", "uncommitted_gap_before_s", 2),
    ("uncommitted gap kept s", "uncommitted_gap_kept_s", 2),
)


def load(directory: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((directory / "rebalance_cooperative.json").read_text())
    return rows


def spread(values: list[float], decimals: int) -> str:
    """``median (min-max)``, or the one value when all runs agree or there is one."""
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    fmt = f"{{:,.{decimals}f}}"
    if lo == hi:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(lo)}-{fmt.format(hi)})"


def table(runs: list[list[dict[str, Any]]]) -> tuple[list[str], list[str]]:
    """The table's lines and the runs left out (not exact)."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    wrong: list[str] = []
    for number, rows in enumerate(runs, start=1):
        for r in rows:
            key = tuple(str(r[k]) for k in KEY)
            if r["lost"] or r["duplicated"]:
                wrong.append(
                    f"run {number}: {' '.join(key)} lost {r['lost']}, duplicated {r['duplicated']}"
                )
                continue
            groups.setdefault(key, []).append(r)
    header = "| scenario | protocol | contender | runs | " + " | ".join(c for c, _, _ in COLUMNS)
    lines = [header + " |", "|---" * (4 + len(COLUMNS)) + "|"]
    for key in sorted(groups):
        rows = groups[key]
        cells = [spread([float(r[f]) for r in rows], d) for _, f, d in COLUMNS]
        lines.append(f"| {' | '.join(key)} | {len(rows)} | {' | '.join(cells)} |")
    return lines, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="the --out directory of each run")
    args = parser.parse_args()
    lines, wrong = table([load(d) for d in args.runs])
    print("\n".join(lines))
    for w in wrong:
        print(f"- not exact, left out: {w}")


if __name__ == "__main__":
    main()
