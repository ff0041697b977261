"""Every fixed scenario's status against Kafka Streams, one line each (the phase-2 work list).

``python -m tests.differential.report`` from the repository root (one JVM for all). Prints
``match``, ``DIFF`` with the first difference, or ``ORACLE`` when Kafka Streams cannot run the
scenario, then the totals; ``--toml`` prints known_differences.toml lines for the differing
ones instead.
"""

from __future__ import annotations

import argparse

from tests.differential import streamrt_side
from tests.differential.compare import first_difference
from tests.differential.oracle import Oracle
from tests.differential.scenarios import known_differences, load, scenario_files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--toml", action="store_true", help="print known-difference lines")
    args = parser.parse_args()
    known = known_differences()
    oracle = Oracle()
    counts = {"match": 0, "DIFF": 0, "ORACLE": 0}
    try:
        for path in scenario_files():
            scenario = load(path)
            expected = oracle.run(scenario)
            errors = [e.error for e in expected if e.error is not None]
            if errors:
                status, detail = "ORACLE", errors[0]
            else:
                diff = first_difference(expected, streamrt_side.run(scenario))
                status, detail = ("match", "") if diff is None else ("DIFF", diff)
            counts[status] += 1
            name = scenario["name"]
            if args.toml and status == "DIFF":
                print(f'"{name}" = "{known.get(name, detail)}"'.replace("\\", "\\\\"))
            elif not args.toml:
                print(f"{status:6} {name}: {detail}")
    finally:
        oracle.close()
    print(
        f"# {sum(counts.values())} scenarios: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    )


if __name__ == "__main__":
    main()
