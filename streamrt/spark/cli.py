"""``streamrt report ...``: reports computed with Spark over topics and state stores.

PySpark is imported only when a report runs, so ``streamrt --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from streamrt.cli_options import add_bootstrap_server

__all__ = ("register",)

_COLUMNS = (
    "partition",
    "records",
    "first_offset",
    "last_offset",
    "first_timestamp",
    "last_timestamp",
    "null_keys",
    "value_bytes",
)


def register(subparsers: Any) -> None:
    report = subparsers.add_parser("report", help="reports computed with Spark")
    reports = report.add_subparsers(dest="report", metavar="REPORT")
    report.set_defaults(func=lambda args: _usage(report))

    stats = reports.add_parser(
        "topic-stats", help="per-partition counts, offset and time ranges of a topic"
    )
    add_bootstrap_server(stats, "host:port of a broker")
    stats.add_argument("--topic", required=True)
    stats.add_argument("--master", default=None, help="Spark master (default local[2])")
    stats.add_argument("--json", action="store_true", help="print one JSON object per line")
    stats.set_defaults(func=_topic_stats)

    deploy = reports.add_parser(
        "deploy", help="rebalances, gaps, restores and downtime of a deploy, from its events"
    )
    add_bootstrap_server(deploy, "host:port of a broker")
    deploy.add_argument("--application-id", required=True, help="reads <application.id>-events")
    deploy.add_argument("--out", required=True, help="directory for Parquet, Markdown, HTML, PNG")
    deploy.add_argument("--from", dest="from_ts", type=float, default=None, help="epoch seconds")
    deploy.add_argument("--to", dest="to_ts", type=float, default=None, help="epoch seconds")
    deploy.add_argument("--master", default=None, help="Spark master (default local[2])")
    deploy.set_defaults(func=_deploy)

    verify = reports.add_parser(
        "verify", help="recompute the sessions app's profiles and compare them with its output"
    )
    add_bootstrap_server(verify, "host:port of a broker")
    verify.add_argument("--application-id", default="sessions", help="for the report's title")
    verify.add_argument("--input-topic", default="clicks")
    verify.add_argument("--output-topic", default="session-profiles")
    verify.add_argument("--master", default=None, help="Spark master (default local[2])")
    verify.set_defaults(func=_verify)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


@contextmanager
def _spark(args: argparse.Namespace, report: str) -> Iterator[Any]:
    """A session for one report, stopped after it unless one was live already (the command
    called in-process next to a running session)."""
    from pyspark.sql import SparkSession

    from streamrt.spark.session import get_session

    owned = SparkSession.getActiveSession() is None
    spark = get_session(master=args.master, app_name=f"streamrt-report-{report}")
    try:
        yield spark
    finally:
        if owned:
            spark.stop()


def _deploy(args: argparse.Namespace) -> int:
    from pathlib import Path

    from streamrt.spark.deploy_render import write_deploy_report
    from streamrt.spark.deploy_report import deploy_report

    with _spark(args, "deploy") as spark:
        report, frames = deploy_report(
            spark, args.bootstrap_server, args.application_id, args.from_ts, args.to_ts
        )
        out = write_deploy_report(report, frames, Path(args.out))
    for key, value in report.summary.items():
        print(f"{key:<18}{value}")
    print(f"report            {out / 'report.md'}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from streamrt.spark.verify import verify_sessions

    with _spark(args, "verify") as spark:
        mismatches = verify_sessions(
            spark, args.bootstrap_server, args.input_topic, args.output_topic
        )
    for m in mismatches:
        print(f"MISMATCH key={m['key']} expected={m['expected']} actual={m['actual']}")
    verdict = f"{len(mismatches)} mismatching keys" if mismatches else "all keys equal"
    print(f"{args.application_id}: {args.input_topic} -> {args.output_topic}: {verdict}")
    return 1 if mismatches else 0


def _topic_stats(args: argparse.Namespace) -> int:
    from streamrt.spark.reports import topic_stats

    with _spark(args, "topic-stats") as spark:
        rows = topic_stats(spark, args.bootstrap_server, args.topic)
    if args.json:
        for row in rows:
            print(json.dumps(row, default=str))
    else:
        print(_table(rows))
    return 0


def _table(rows: list[dict[str, Any]]) -> str:
    cells = [list(_COLUMNS)] + [["" if r[c] is None else str(r[c]) for c in _COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_COLUMNS))]
    lines = ("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(line.rstrip() for line in lines)
