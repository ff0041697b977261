"""Rerun the headline figures at a few-minute size and compare them with the recorded ones.

``make bench-check``. The figures README.md and docs/benchmarks.md lead with live in prose, and
nothing reran them after a change to the data path or the membership: the demo's hand-off gap
went from 0.48 s to 1.37 s unseen. This reruns them, compares each with its last recorded value
in ``bench/headlines.json`` and prints: figure, recorded, now, change, verdict.

Groups (``--only``, comma-separated; all by default):

- ``demo``: ``streamrt demo --json`` at a small size: per contender (static, hand-off,
  exactly-once, dynamic) the longest per-partition processing gap, the rebalances during the
  deploy and the bytes restored;
- ``peers``: ``bench/peers_throughput.py`` at a small size, the default data path
  (``streamrt-1t-rdk``) and Quix Streams: the throughput ratio streamrt ÷ Quix per workload,
  wall-clock and per CPU-second (both taken within the run).
  Quix runs from ``.venv-bench`` (``make bench-venv``); without it the figures are skipped
  with the reason, not failed;
- ``restore``: ``bench/runtime_sessions.py``: a full restore's rate ÷ a bare fetch of the
  same changelog, with librdkafka (like with like: the default restore consumer) and aiokafka.

Verdicts: ``ok`` within the figure's margin, ``WORSE`` worse by more than it, ``better``
better by more than it, ``new`` (nothing recorded), ``skipped``. The margin is the larger of
the figure's absolute tolerance and its percentage of the recorded value; ``--record --runs N``
widens the absolute tolerance to the spread measured over the N runs.

Exit codes: 0 no figure worse beyond its margin; 1 at least one ``WORSE``; 2 a benchmark
failed, timed out or reported wrong output (its figures missing; takes precedence over 1),
or the arguments or the recorded file were unusable.

    make bench-check                                     # compare with bench/headlines.json
    .venv/bin/python bench/check_headlines.py --only restore
    .venv/bin/python bench/check_headlines.py --record --runs 2   # today's values, recorded
    .venv/bin/python bench/check_headlines.py --record --only restore --runs 5   # one group

The sizes come from the recorded file (``sizes``) so that now and then measure the same
thing; with no file, the defaults below. ``BENCH_SLOW_RESTORE_MS`` (read by
``bench/runtime_sessions.py``) injects a slowdown into the restore, to see the check flag it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _headlines import Spec, compare, exit_code, load, record, save, table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_FILE = HERE / "headlines.json"
GROUPS = ("demo", "peers", "restore")
DEFAULT_SIZES: dict[str, dict[str, Any]] = {
    # the demo's own shape (3 instances x 2 threads, 12 partitions, 2 s down per instance)
    # with less state and load: ~11 MB instead of ~220 MB. session.timeout.ms 30 s, not the
    # demo's 10 s: at load average 11 one static instance took 11.4 s to come back and was
    # expelled (1 rebalance); a static restart that rebalances within 30 s is a regression
    "demo": {
        "users": 5000,
        "rate": 100,
        "restart_delay": 2.0,
        "session_timeout_ms": 30_000,
        "timeout": 900,
    },
    # --quick's sizes give the librdkafka path a 10 %-90 % window under 1 s: too short. After
    # the word count and sessions speed-ups (2026-11-28) 20,000 lines and 60,000 clicks were
    # too short too: these give streamrt ~3 s windows on a quiet machine (~25k lines/s, ~45k
    # clicks/s wall); a too-short run fails naming the size to raise
    "peers": {
        "contenders": "streamrt-1t-rdk,quix",
        "records": 400_000,
        "wordcount_records": 100_000,
        "session_records": 150_000,
        "timeout": 900,
    },
    # runs: the restore ratio moved from 0.27 to 0.13 between two single runs minutes apart
    # (disk and CPU load from others: the restore writes RocksDB, the bare fetch does not),
    # and a run costs ~10-35 s, so every check takes the median of 3
    "restore": {"users": 5000, "clicks": 25000, "timeout": 600, "runs": 3},
}
DEMO_CONTENDERS = {
    "streamrt static": "static",
    "streamrt handoff": "handoff",
    "streamrt static EOS": "eos",
    "streamrt dynamic": "dynamic",
}
WORKLOADS = ("stateless", "wordcount", "sessions")
PEERS_SIZE_KEYS = {
    "stateless": "records",
    "wordcount": "wordcount_records",
    "sessions": "session_records",
}


def demo_specs() -> list[Spec]:
    """Gaps get +0.3 s or 25 %; the zeros of static, hand-off and EOS must stay zero;
    dynamic's rebalances and restore are the contrast and move with timing."""
    out = []
    for c in DEMO_CONTENDERS.values():
        zero = c != "dynamic"
        out += [
            Spec(f"demo.{c}.gap", f"demo {c}: longest partition gap", "s", "lower", 0.3, 25),
            Spec(
                f"demo.{c}.rebalances",
                f"demo {c}: rebalances",
                "",
                "lower",
                0 if zero else 2,
                0 if zero else 25,
                widen=not zero,
            ),
            Spec(
                f"demo.{c}.restored",
                f"demo {c}: restored",
                "MB",
                "lower",
                0 if zero else 1,
                0 if zero else 50,
                widen=not zero,
            ),
        ]
    return out


SPECS: dict[str, list[Spec]] = {
    "demo": demo_specs(),
    # wall-clock rates move with the other processes on the 2 cores far more than rates per
    # CPU-second do: the wall ratio gets the wider default margin
    "peers": [
        spec
        for w in WORKLOADS
        for spec in (
            Spec(f"peers.{w}.vs_quix", f"throughput {w} / Quix, wall", "x", "higher", 0, 40),
            Spec(
                f"peers.{w}.cpu_vs_quix", f"throughput {w} / Quix, per CPU-s", "x", "higher", 0, 25
            ),
        )
    ],
    "restore": [
        Spec("restore.vs_librdkafka", "full restore / bare librdkafka fetch", "x", "higher", 0, 25),
        Spec("restore.vs_aiokafka", "full restore / bare aiokafka fetch", "x", "higher", 0, 25),
    ],
}


class BenchFailed(Exception):
    """A benchmark exited non-zero, timed out or reported wrong output."""


def demo_figures(reports: list[dict[str, Any]]) -> dict[str, float]:
    """``streamrt demo --json``'s reports -> figures; wrong output is a failure, not a figure."""
    out: dict[str, float] = {}
    for r in reports:
        c = DEMO_CONTENDERS.get(r["contender"])
        if c is None:
            continue
        if not r["correctness"]["ok"]:
            raise BenchFailed(f"demo {c}: the app's output was wrong: {r['correctness']}")
        out[f"demo.{c}.gap"] = float(r["longest_gap_s"])
        out[f"demo.{c}.rebalances"] = float(r["rebalances"])
        out[f"demo.{c}.restored"] = float(r["restored_bytes"]) / 1e6
    return out


def peers_figures(doc: dict[str, Any]) -> dict[str, float]:
    """``peers_throughput.py``'s results.json -> streamrt-1t-rdk ÷ quix per workload (taken
    within the run); a contender without a verified rate is a failure."""
    out: dict[str, float] = {}
    for r in doc["results"]:
        if r["contender"] != "streamrt-1t-rdk" and r["contender"] != "quix":
            continue
        if not r["rate"]:
            why = r["error"] or "no rate"
            if "too short" in why:  # the run was too quick to time: the recorded size is stale
                why += f" (bench/headlines.json: sizes.peers.{PEERS_SIZE_KEYS[r['workload']]})"
            raise BenchFailed(f"peers {r['workload']} {r['contender']}: {why}")
        if r["contender"] == "streamrt-1t-rdk":
            for key, name in (("quix", "vs_quix"), ("cpu-quix", "cpu_vs_quix")):
                if key in r["ratios"]:
                    out[f"peers.{r['workload']}.{name}"] = float(r["ratios"][key])
    return out


def restore_figures(doc: dict[str, Any]) -> dict[str, float]:
    """``runtime_sessions.py --json`` -> the restore's ratios to the bare fetches."""
    return {
        "restore.vs_librdkafka": float(doc["restore_vs_bare_librdkafka"]),
        "restore.vs_aiokafka": float(doc["restore_vs_bare_aiokafka"]),
    }


def _run(argv: list[str], log: Path, timeout: float) -> None:
    """One benchmark as its own process, its output to ``log`` (the table stays readable)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with log.open("w") as f:
        try:
            done = subprocess.run(
                argv, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout
            )
        except subprocess.TimeoutExpired as e:
            raise BenchFailed(f"timed out after {timeout:.0f} s (log: {log})") from e
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise BenchFailed(f"exited {done.returncode} (log: {log}):\n{tail}")


def run_demo(size: dict[str, Any], work: Path) -> dict[str, float]:
    out = work / "demo.json"
    streamrt = Path(sys.executable).with_name("streamrt")
    argv = [str(streamrt), "demo", "--users", str(size["users"]), "--rate", str(size["rate"])]
    argv += ["--restart-delay", str(size["restart_delay"]), "--console-port", "-1"]
    argv += ["--session-timeout-ms", str(size["session_timeout_ms"])]
    _run([*argv, "--json", str(out)], work / "demo.log", size["timeout"])
    return demo_figures(json.loads(out.read_text()))


def quix_missing(python: str) -> str:
    """Why Quix Streams cannot run ('' when it can)."""
    if not Path(python).exists():
        return f"Quix Streams not installed ({python} missing: make bench-venv)"
    probe = subprocess.run([python, "-c", "import quixstreams"], capture_output=True, check=False)
    return "" if probe.returncode == 0 else f"quixstreams does not import in {python}"


def run_peers(size: dict[str, Any], work: Path, quix_python: str) -> dict[str, float]:
    out = work / "peers"
    argv = [sys.executable, str(HERE / "peers_throughput.py"), "--records", str(size["records"])]
    argv += ["--wordcount-records", str(size["wordcount_records"])]
    argv += ["--session-records", str(size["session_records"])]
    argv += ["--contenders", size["contenders"], "--quix-python", quix_python]
    _run([*argv, "--out", str(out)], work / "peers.log", size["timeout"])
    return peers_figures(json.loads((out / "results.json").read_text()))


def run_restore(size: dict[str, Any], work: Path) -> dict[str, float]:
    out = work / "restore.json"
    argv = [sys.executable, str(HERE / "runtime_sessions.py")]
    argv += ["--users", str(size["users"]), "--clicks", str(size["clicks"])]
    _run([*argv, "--json", str(out)], work / "restore.log", size["timeout"])
    return restore_figures(json.loads(out.read_text()))


def _commit() -> str:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout

    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no").strip()
    return f"{head}-dirty" if dirty else head


def measure(
    groups: list[str], sizes: dict[str, dict[str, Any]], runs: int, work: Path, quix: str
) -> tuple[dict[str, list[float]], dict[str, str], list[str]]:
    """Every selected group ``runs`` times (0: the group's own ``runs``, default 1): (values
    per figure, skipped figures and why, failures)."""
    values: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}
    failures: list[str] = []
    missing = quix_missing(quix) if "peers" in groups else ""
    runners: dict[str, Callable[[dict[str, Any], Path], dict[str, float]]] = {
        "demo": run_demo,
        "peers": lambda size, w: run_peers(size, w, quix),
        "restore": run_restore,
    }
    for group in GROUPS:
        if group not in groups:
            skipped.update({s.name: "not selected" for s in SPECS[group]})
            continue
        if group == "peers" and missing:
            print(f"peers: skipped: {missing}", flush=True)
            skipped.update({s.name: missing for s in SPECS[group]})
            continue
        n = runs or int(sizes[group].get("runs", 1))
        for i in range(1, n + 1):
            began = time.monotonic()
            print(f"{group}: run {i} of {n} {sizes[group]} ...", flush=True)
            run_dir = work / f"{group}-{i}"
            run_dir.mkdir(parents=True, exist_ok=True)
            try:
                got = runners[group](sizes[group], run_dir)
            except BenchFailed as e:
                failures.append(f"{group}: {e}")
                print(f"{group}: FAILED: {e}", flush=True)
                for spec in SPECS[group]:  # a failed group's figures are neither shown
                    values.pop(spec.name, None)  # nor recorded: its other runs may mislead
                    skipped[spec.name] = "benchmark failed"
                break
            for k, v in got.items():
                values.setdefault(k, []).append(v)
            print(f"{group}: run {i} done in {time.monotonic() - began:.0f} s", flush=True)
    return values, skipped, failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(GROUPS), help=f"groups: {', '.join(GROUPS)}")
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE, help="the recorded figures")
    ap.add_argument("--record", action="store_true", help="write today's values to --file")
    ap.add_argument(
        "--runs", type=int, default=0, help="runs per group (default: the group's own, 1 or 3)"
    )
    ap.add_argument("--conditions", default="", help="with --record: the machine's state")
    ap.add_argument("--quix-python", default=str(ROOT / ".venv-bench" / "bin" / "python"))
    ap.add_argument("--work-dir", type=Path, help="keep the benchmarks' logs here")
    args = ap.parse_args(argv)
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    if not groups or any(g not in GROUPS for g in groups) or args.runs < 0:
        print(f"--only takes {', '.join(GROUPS)}; --runs at least 1", file=sys.stderr)
        return 2
    try:
        head, recorded = load(args.file)
    except (ValueError, TypeError, KeyError) as e:
        print(f"{args.file}: unreadable: {e}", file=sys.stderr)
        return 2
    sizes = {g: {**DEFAULT_SIZES[g], **head.get("sizes", {}).get(g, {})} for g in GROUPS}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        work = args.work_dir or Path(tmp)
        values, skipped, failures = measure(groups, sizes, args.runs, work, args.quix_python)
    specs = [s for g in GROUPS for s in SPECS[g]]
    now = {k: statistics.median(v) for k, v in values.items()}
    rows = compare(specs, recorded, now, skipped)
    print()
    print(f"recorded: {args.file} ({'see each figure' if recorded else 'nothing yet'})")
    print(table(rows))
    for f in failures:
        print(f"FAILED {f}")
    if args.record:
        date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        said = args.conditions or (
            f"{os.cpu_count()} cores; load average {load_before:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end"
        )
        old = head.get("conditions")
        conditions = dict(old) if isinstance(old, dict) else {}
        for g in groups:  # per group: a group recorded alone keeps the others' conditions
            if any(s.name in values for s in SPECS[g]):
                runs = args.runs or sizes[g].get("runs", 1)
                conditions[g] = f"{date}, {_commit()}: {said}; {runs} run(s)"
        head = {
            "about": "headline figures for bench/check_headlines.py (make bench-check)",
            "conditions": conditions,
            "sizes": sizes,
        }
        figures = record(specs, values, recorded, date, _commit())
        save(args.file, head, figures)
        print(f"recorded {len(values)} figures in {args.file}")
    return 2 if failures else (0 if args.record else exit_code(rows))


if __name__ == "__main__":
    sys.exit(main())
