"""The bounce test at length: many seeded faults against the join/repartition/fold/window app,
under both guarantees, on the embedded broker or a 3-node Apache Kafka 4.3.1.

    PYTHONPATH=. .venv/bin/python bench/chaos_bounce.py --seeds 1-5 --faults 12
    PYTHONPATH=. .venv/bin/python bench/chaos_bounce.py --kafka apache --seeds 1-5

Each run is :func:`tests.chaos.harness.run` (the CI test's harness at a larger size): static
instances x threads, an idempotent acks=all feed, faults drawn by the seed from instance
SIGKILL/SIGTERM, a SIGSTOP past the session timeout (zombie), broker SIGKILL/SIGSTOP (on Apache
Kafka: a partition leader). It prints each run's faults with their gaps, then per guarantee the
runs' lost/duplicated totals and per fault kind the median and maximum gap over its downtime
(the *excess*: what a fault costs beyond the time its target was down; for a zombie, beyond the
session timeout). The baseline is the gap before the first fault (the normal processing gap).
No peer runs here: Quix Streams and faust have no static membership to bounce.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.chaos.faults import BROKER_KINDS, INSTANCE_KINDS
from tests.chaos.harness import ChaosConfig, ChaosReport, run


def _seeds(spec: str) -> list[int]:
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in spec.split(",")]


def _summary(guarantee: str, reports: list[ChaosReport]) -> list[str]:
    lines = [
        f"== {guarantee}: {len(reports)} runs, {sum(r.inputs for r in reports)} inputs, "
        f"lost {sum(r.total_lost for r in reports)}, "
        f"duplicated {sum(r.total_duplicated for r in reports)}, normal gap median "
        f"{statistics.median(r.gap_before_faults_s for r in reports):.2f}s"
    ]
    kinds = sorted({f.kind for r in reports for f in r.faults})
    lines.append(f"{'fault':<15}{'n':>4}{'excess median':>15}{'min':>7}{'max':>7}{'gap max':>9}")
    for kind in kinds:
        rows = [f for r in reports for f in r.faults if f.kind == kind]
        excess = [f.excess_s for f in rows]
        lines.append(
            f"{kind:<15}{len(rows):>4}{statistics.median(excess):>14.2f}s{min(excess):>6.2f}s"
            f"{max(excess):>6.2f}s{max(f.gap_s for f in rows):>8.2f}s"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--guarantee", choices=["at_least_once", "exactly_once_v2", "both"], default="both"
    )
    parser.add_argument("--seeds", default="1-5", help="e.g. 1-5 or 3,7")
    parser.add_argument("--faults", type=int, default=12, help="faults per run")
    parser.add_argument("--kafka", choices=["embedded", "apache"], default="embedded")
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=float, default=200.0, help="orders per second")
    parser.add_argument(
        "--kinds",
        default=",".join(INSTANCE_KINDS + BROKER_KINDS),
        help="fault kinds drawn from (comma list)",
    )
    parser.add_argument(
        "--settle", type=float, default=4.0, help="seconds after each fault's recovery"
    )
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every report here")
    args = parser.parse_args()
    guarantees = (
        ["at_least_once", "exactly_once_v2"] if args.guarantee == "both" else [args.guarantee]
    )
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="chaos-bounce-"))
    results: dict[str, list[ChaosReport]] = {}
    for guarantee in guarantees:
        for seed in _seeds(args.seeds):
            config = ChaosConfig(
                work=work / f"{guarantee}-{seed}",
                guarantee=guarantee,
                seed=seed,
                faults=args.faults,
                kafka=args.kafka,
                kinds=tuple(args.kinds.split(",")),
                instances=args.instances,
                threads=args.threads,
                partitions=args.partitions,
                users=200,
                rate=args.rate,
                settle_s=args.settle,
            )
            results.setdefault(guarantee, []).append(run(config))
    failed = False
    for guarantee, reports in results.items():
        print("\n".join(_summary(guarantee, reports)))
        failed |= any(r.total_lost for r in reports)
        failed |= guarantee == "exactly_once_v2" and any(r.total_duplicated for r in reports)
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {g: [json.loads(r.to_json()) for r in rs] for g, rs in results.items()}, indent=2
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
