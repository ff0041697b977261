"""The report of ``bench/peers_throughput.py``: one result per (workload, contender), the
ratios within the run, the markdown table and the chart."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from _peers_workloads import WORKLOADS


@dataclass
class Result:
    workload: str
    contender: str
    records: int
    rate: float | None = None  # input records/s between 10 % and 90 %
    cpu_rate: float | None = None  # input records per CPU-second of the contender, 10 %-90 %
    broker_cores: float | None = None  # broker CPU-s per wall-s, 10 %-90 % (embedded broker)
    contender_cores: float | None = None  # contender CPU-s per wall-s, 10 %-90 %
    # runnable-but-waiting-for-a-CPU seconds per wall-s of the contender, 10 %-90 %: with
    # contender_cores, the cores it would have used on a free machine (roughly)
    runqueue_cores: float | None = None
    idle_cores: float | None = None  # the machine's idle cores during the window
    seconds_to_done: float | None = None
    outputs: int = 0
    window_samples: int = 0  # 100 ms samples between 10 % and 90 %
    # (seconds since the contender started, outputs seen) at each sample where the count moved:
    # shows a burst (a short window) or a stall
    trace: list[tuple[float, int]] = field(default_factory=list)
    verified: bool = False
    error: str = ""
    ratios: dict[str, float] = field(default_factory=dict)


def add_ratios(results: list[Result]) -> None:
    for wl in WORKLOADS:
        rows = {r.contender: r for r in results if r.workload == wl and r.rate}
        for r in rows.values():
            for ref_name, ref in (
                ("streamrt-1t", "streamrt-1t"),
                ("quix", "quix"),
                ("faust", "faust"),
                ("bare", "bare-confluent"),
                ("kafka-streams", "kafka-streams-1t"),
            ):
                if ref in rows and r.rate:
                    r.ratios[ref_name] = r.rate / (rows[ref].rate or 1)
            if "quix" in rows and r.cpu_rate and rows["quix"].cpu_rate:
                r.ratios["cpu-quix"] = r.cpu_rate / (rows["quix"].cpu_rate or 1)


def threads_of(contender: str) -> int:
    """Stream threads in all: ``streamrt-2x1`` 2, ``kafka-streams-2t`` 2, others 1."""
    m = re.search(r"-(?:(\d+)x)?(\d+)[tp]?(?:\+|$)", contender)
    if not m or not contender.startswith(("streamrt", "kafka-streams")):
        return 1
    return int(m.group(1) or 1) * int(m.group(2))


def cores(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def table(results: list[Result]) -> str:
    head = (
        "| workload | contender | records | records/s | per thread | ÷ streamrt-1t | ÷ Quix "
        "| ÷ faust | ÷ Kafka Streams 1t | ÷ bare | records per CPU-s | CPU-s ÷ Quix "
        "| contender cores | + waiting for a CPU | broker cores | idle cores |"
    )
    lines = [head, "|---|---|" + "---:|" * 14]
    for r in results:
        if r.error.startswith("skipped"):
            continue
        rate = f"{r.rate:,.0f}" if r.rate else f"— ({r.error or 'no rate'})"

        def ratio(k: str, r: Result = r) -> str:
            return f"{r.ratios[k]:.2f}" if k in r.ratios else ""

        per_thread = f"{r.rate / threads_of(r.contender):,.0f}" if r.rate else ""
        lines.append(
            f"| {r.workload} | {r.contender} | {r.records:,} | {rate} | {per_thread} | "
            f"{ratio('streamrt-1t')} | {ratio('quix')} | {ratio('faust')} | "
            f"{ratio('kafka-streams')} | {ratio('bare')} | "
            f"{f'{r.cpu_rate:,.0f}' if r.cpu_rate else ''} | {ratio('cpu-quix')} | "
            f"{cores(r.contender_cores)} | {cores(r.runqueue_cores)} | "
            f"{cores(r.broker_cores)} | {cores(r.idle_cores)} |"
        )
    return "\n".join(lines)


def chart(results: list[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = [w for w in WORKLOADS if any(r.workload == w and r.rate for r in results)]
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4.5), squeeze=False)
    for ax, wl in zip(axes[0], workloads, strict=True):
        rows = [r for r in results if r.workload == wl and r.rate]
        colors = [
            "tab:blue"
            if r.contender.startswith("streamrt")
            else "tab:orange"
            if r.contender == "quix"
            else "tab:green"
            if r.contender == "faust"
            else "tab:red"
            if r.contender.startswith("kafka-streams")
            else "tab:gray"
            for r in rows
        ]
        ax.barh([r.contender for r in rows], [r.rate or 0 for r in rows], color=colors)
        ax.invert_yaxis()
        ax.set_title(f"{wl} ({rows[0].records:,} records)")
        ax.set_xlabel("input records/s (10%-90%)")
        for i, r in enumerate(rows):
            ax.text(r.rate or 0, i, f" {r.rate:,.0f}", va="center", fontsize=8)
        ax.margins(x=0.25)
    fig.suptitle("Throughput against the peers (same broker, same input, one process each)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
