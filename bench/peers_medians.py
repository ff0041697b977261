"""Medians and spread over several runs of ``bench/peers_throughput.py``.

One run of the harness measures each contender once, one after another, on a shared machine:
a single figure can be luck either way (issue 24: the 1.90x on sessions was one run). This
reads the ``results.json`` of several runs (``--out`` of each) and prints, per workload and
contender, the median and the range (min-max) of the wall-clock rate, the rate per processing
thread, records per CPU-second and the contender's cores, and of the ratios to a reference
contender computed **within each run** (both contenders measured minutes apart on the same
broker), then their median. Only verified runs with a rate count; the others are listed.

    python bench/peers_medians.py /tmp/peers/embedded-1 /tmp/peers/embedded-2 /tmp/peers/embedded-3
    python bench/peers_medians.py --reference kafka-streams-1t DIR...
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers_report import threads_of

Run = dict[tuple[str, str], dict[str, Any]]  # (workload, contender) -> one result of one run


@dataclass
class Series:
    """One (workload, contender)'s figures across runs."""

    rate: list[float] = field(default_factory=list)
    cpu_rate: list[float] = field(default_factory=list)
    cores: list[float] = field(default_factory=list)
    wall_ratio: list[float] = field(default_factory=list)  # to the reference, same run
    cpu_ratio: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def load(directory: Path) -> tuple[dict[str, Any], Run]:
    doc = json.loads((directory / "results.json").read_text())
    return doc["meta"], {(r["workload"], r["contender"]): r for r in doc["results"]}


def collect(runs: list[Run], reference: str) -> dict[tuple[str, str], Series]:
    out: dict[tuple[str, str], Series] = {}
    for run in runs:
        for (workload, contender), r in run.items():
            if r["error"].startswith("skipped"):
                continue
            s = out.setdefault((workload, contender), Series())
            if not (r["verified"] and r["rate"]):
                s.failures.append(r["error"] or "no rate")
                continue
            s.rate.append(r["rate"])
            s.cpu_rate.append(r["cpu_rate"] or 0.0)
            s.cores.append(r["contender_cores"] or 0.0)
            ref = run.get((workload, reference))
            if ref and ref["verified"] and ref["rate"]:
                s.wall_ratio.append(r["rate"] / ref["rate"])
                if r["cpu_rate"] and ref["cpu_rate"]:
                    s.cpu_ratio.append(r["cpu_rate"] / ref["cpu_rate"])
    return out


def spread(values: list[float], fmt: str = ",.0f") -> str:
    """``median (min-max)``, or '' for no values."""
    if not values:
        return ""
    med = format(statistics.median(values), fmt)
    if len(values) == 1:
        return med
    return f"{med} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def table(series: dict[tuple[str, str], Series], reference: str) -> list[str]:
    head = (
        "| workload | contender | runs | records/s | per thread | records per CPU-s "
        f"| contender cores | ÷ {reference}, wall | ÷ {reference}, per CPU-s | failed runs |"
    )
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for (workload, contender), s in series.items():
        per_thread = [v / threads_of(contender) for v in s.rate]
        lines.append(
            f"| {workload} | {contender} | {len(s.rate)} | {spread(s.rate)} | "
            f"{spread(per_thread)} | {spread(s.cpu_rate)} | {spread(s.cores, '.2f')} | "
            f"{spread(s.wall_ratio, '.2f')} | {spread(s.cpu_ratio, '.2f')} | "
            f"{'; '.join(s.failures)} |"
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="--out directories of the harness")
    ap.add_argument("--reference", default="quix", help="the contender ratios are taken to")
    args = ap.parse_args()
    loaded = [load(d) for d in args.runs]
    for meta, _run in loaded:
        print(f"run {meta['date']} on {meta.get('broker', 'embedded')}: {meta['command']}")
    print()
    print("\n".join(table(collect([run for _m, run in loaded], args.reference), args.reference)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
