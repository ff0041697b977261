"""The headline figures' bookkeeping for ``bench/check_headlines.py``: the recorded file, the
comparison of a new measurement with the recorded one, and the table.

Pure functions (no processes, no clock) so that the verdicts can be tested with made-up
recorded and measured values: the check exists because a figure slipped unseen (the hand-off
gap went from 0.48 s to 1.37 s), so its comparison must be the part that cannot be wrong.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

Better = Literal["lower", "higher"]
OK, WORSE, BETTER, NEW, SKIPPED = "ok", "WORSE", "better", "new", "skipped"


@dataclass(frozen=True)
class Spec:
    """What a figure is and how much it may move between runs before a change counts.

    The margin is the larger of ``tolerance`` (in the figure's unit) and ``tolerance_pct``
    of the recorded value: an absolute floor for gaps and counts whose recorded value may
    be 0, a share for ratios."""

    name: str
    label: str
    unit: str
    better: Better
    tolerance: float = 0.0
    tolerance_pct: float = 0.0
    widen: bool = True  # False: a figure that must stay exact (static's 0 rebalances)


@dataclass(frozen=True)
class Recorded:
    """A figure's last recorded value, as kept in ``bench/headlines.json``."""

    value: float
    unit: str
    better: Better
    tolerance: float
    tolerance_pct: float
    date: str
    commit: str
    label: str = ""
    runs: list[float] = field(default_factory=list)  # every run behind ``value`` (its spread)


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    name: str
    label: str
    unit: str
    recorded: float | None
    now: float | None
    verdict: str
    note: str = ""

    @property
    def change(self) -> float | None:
        if self.recorded is None or self.now is None:
            return None
        return self.now - self.recorded


def margin(rec: Recorded) -> float:
    """How far a measurement may move the wrong way and still be ``ok``."""
    return max(rec.tolerance, rec.tolerance_pct / 100.0 * abs(rec.value))


def verdict(rec: Recorded | None, now: float | None) -> str:
    """``WORSE`` when ``now`` is worse than the recorded value by more than its margin,
    ``better`` when it is better by more than the margin, ``ok`` within it; ``new`` when
    nothing was recorded, ``skipped`` when nothing was measured."""
    if now is None:
        return SKIPPED
    if rec is None:
        return NEW
    worse_by = now - rec.value if rec.better == "lower" else rec.value - now
    m = margin(rec)
    if worse_by > m + 1e-12:
        return WORSE
    if worse_by < -m - 1e-12:
        return BETTER
    return OK


def compare(
    specs: list[Spec],
    recorded: dict[str, Recorded],
    measured: dict[str, float],
    skipped: dict[str, str] | None = None,
) -> list[Row]:
    """One row per spec, in the specs' order; ``skipped`` maps a figure to why it was not
    measured (Quix Streams not installed, a group not selected)."""
    skipped = skipped or {}
    rows = []
    for s in specs:
        rec = recorded.get(s.name)
        now = measured.get(s.name)
        note = skipped.get(s.name, "") if now is None else ""
        rows.append(
            Row(s.name, s.label, s.unit, rec.value if rec else None, now, verdict(rec, now), note)
        )
    return rows


def exit_code(rows: list[Row]) -> int:
    """1 when any figure got worse beyond its margin, else 0 (2 is the caller's: a benchmark
    that could not run or whose output was wrong)."""
    return 1 if any(r.verdict == WORSE for r in rows) else 0


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "MB":
        return f"{value:,.1f} MB"
    if unit == "":  # counts
        return f"{value:g}"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:g} {unit}"


def table(rows: list[Row]) -> str:
    """figure | recorded | now | change | verdict, aligned for a terminal."""
    head = ("figure", "recorded", "now", "change", "verdict")
    cells = []
    for r in rows:
        ch = r.change
        if ch is None:
            change = ""
        elif r.recorded:
            change = f"{ch:+.2f} ({ch / abs(r.recorded) * 100:+.0f}%)"
        else:
            change = f"{ch:+.2f}"
        v = r.verdict + (f" ({r.note})" if r.note else "")
        cells.append((r.label or r.name, _fmt(r.recorded, r.unit), _fmt(r.now, r.unit), change, v))
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]
    lines = []
    for c in [head, *cells]:
        lines.append(
            "  ".join(
                c[i].ljust(widths[i]) if i in (0, 4) else c[i].rjust(widths[i])
                for i in range(len(c))
            ).rstrip()
        )
    return "\n".join(lines)


def record(
    specs: list[Spec],
    runs: dict[str, list[float]],
    old: dict[str, Recorded],
    date: str,
    commit: str,
) -> dict[str, Recorded]:
    """Today's values: the median of each figure's runs, with its margin widened to the spread
    seen between those runs (max - min) when that is larger than the spec's default (not for
    a figure that must stay exact). Figures not measured today keep their old record."""
    out = dict(old)
    for s in specs:
        values = runs.get(s.name)
        if not values:
            continue
        spread = max(values) - min(values)
        out[s.name] = Recorded(
            value=round(statistics.median(values), 4),
            unit=s.unit,
            better=s.better,
            tolerance=round(max(s.tolerance, spread if s.widen else 0.0), 4),
            tolerance_pct=s.tolerance_pct,
            date=date,
            commit=commit,
            label=s.label,
            runs=[round(v, 4) for v in values],
        )
    return out


def load(path: Path) -> tuple[dict[str, Any], dict[str, Recorded]]:
    """The file's header (sizes, conditions) and its figures; empty when there is no file."""
    if not path.exists():
        return {}, {}
    doc = json.loads(path.read_text())
    figures = {k: Recorded(**v) for k, v in doc.get("figures", {}).items()}
    head = {k: v for k, v in doc.items() if k != "figures"}
    return head, figures


def save(path: Path, head: dict[str, Any], figures: dict[str, Recorded]) -> None:
    doc = {**head, "figures": {k: asdict(v) for k, v in sorted(figures.items())}}
    path.write_text(json.dumps(doc, indent=1) + "\n")
