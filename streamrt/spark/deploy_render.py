"""Markdown, HTML and PNG charts of a deploy report (tables are small: rendered in Python),
and the report's files: Parquet per table, ``report.md``, ``report.html`` and the charts."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from streamrt.spark.deploy_report import DeployTables

__all__ = ("render_charts", "render_html", "render_markdown", "write_deploy_report")

_TITLES = {
    "rebalances": "Generations",
    "partition_gaps": "Processing gaps per input partition",
    "restores": "Restores",
    "downtime": "Instance downtime",
}


def render_charts(report: DeployTables, out: Path) -> list[str]:
    """Bar charts of downtime per instance and longest gap per partition; returns file names."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    charts: list[str] = []
    series = {
        "downtime.png": (
            "Downtime per restart (s)",
            [f"{r['instance_id']} ({r['new_pid']})" for r in report.downtime],
            [r["downtime_s"] or 0.0 for r in report.downtime],
        ),
        "gaps.png": (
            "Longest processing gap per partition (s)",
            [f"{g.topic}-{g.partition}" for g in report.partition_gaps],
            [g.longest_gap_s for g in report.partition_gaps],
        ),
    }
    for name, (title, labels, values) in series.items():
        figure, axes = plt.subplots(figsize=(6, 3))
        axes.barh(labels or ["(none)"], values or [0.0])
        axes.set_title(title)
        figure.tight_layout()
        figure.savefig(out / name, dpi=80)
        plt.close(figure)
        charts.append(name)
    return charts


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)


def render_markdown(report: DeployTables, charts: list[str]) -> str:
    s = report.summary
    lines = [f"# Deploy report: {s['application_id']}", ""]
    lines += [f"- **{k}**: {_cell(v)}" for k, v in s.items() if k != "application_id"]
    for name, rows in report.tables().items():
        if name == "summary":
            continue
        lines += ["", f"## {_TITLES[name]}", ""]
        if not rows:
            lines.append("(none)")
            continue
        columns = list(rows[0])
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|" + "---|" * len(columns))
        lines += ["| " + " | ".join(_cell(r[c]) for c in columns) + " |" for r in rows]
    lines += ["", "## Charts", ""] + [f"![{c}]({c})" for c in charts]
    return "\n".join(lines) + "\n"


def render_html(report: DeployTables, charts: list[str]) -> str:
    s = report.summary
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Deploy report: {html.escape(str(s['application_id']))}</title></head><body>",
        f"<h1>Deploy report: {html.escape(str(s['application_id']))}</h1><ul>",
    ]
    parts += [
        f"<li><b>{html.escape(k)}</b>: {html.escape(_cell(v))}</li>"
        for k, v in s.items()
        if k != "application_id"
    ]
    parts.append("</ul>")
    for name, rows in report.tables().items():
        if name == "summary":
            continue
        parts.append(f"<h2>{_TITLES[name]}</h2>")
        if not rows:
            parts.append("<p>(none)</p>")
            continue
        columns = list(rows[0])
        parts.append("<table border='1'><tr>")
        parts += [f"<th>{html.escape(c)}</th>" for c in columns]
        parts.append("</tr>")
        for r in rows:
            cells = "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in columns)
            parts.append(f"<tr>{cells}</tr>")
        parts.append("</table>")
    parts += [f"<img src='{html.escape(c)}' alt='{html.escape(c)}'>" for c in charts]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_deploy_report(report: DeployTables, frames: dict[str, DataFrame], out: Path) -> Path:
    """Parquet per table under ``out/<table>/``, plus ``report.md``, ``report.html`` and PNGs."""
    out.mkdir(parents=True, exist_ok=True)
    for name, df in frames.items():
        df.write.mode("overwrite").parquet(str(out / name))
    charts = render_charts(report, out)
    (out / "report.md").write_text(render_markdown(report, charts))
    (out / "report.html").write_text(render_html(report, charts))
    return out
