"""What a contender of ``bench/peers_throughput.py`` and the machine used, read from ``/proc``.

CPU of a contender's whole process tree (stream thread processes included), the time its
threads waited for a CPU, the machine's idle time, and the 10 %-90 % window of the samples.
"""

from __future__ import annotations

import os


def descendants(pids: list[int]) -> list[int]:
    """The processes and all their live descendants (stream thread processes), from /proc."""
    parent_of: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent_of[int(entry)] = int(f.read().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = list(pids), list(pids)
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parent_of.items() if pp == parent]
        out += kids
        todo += kids
    return out


def cpu_seconds(pids: list[int], *, tree: bool = True) -> float:
    """User + system CPU of the processes (every thread) and, with ``tree``, of their live
    descendants, from /proc."""
    total = 0
    for pid in descendants(pids) if tree else pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def runqueue_seconds(pids: list[int]) -> float:
    """Seconds the processes' threads (and their descendants') were runnable but waiting for a
    CPU (``/proc/<pid>/task/<tid>/schedstat``, field 2): demand the machine did not serve."""
    total = 0
    for pid in descendants(pids):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return total / 1e9


def idle_seconds() -> float:
    """Idle + iowait CPU-seconds of the whole machine since boot (``/proc/stat``)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return (values[3] + values[4]) / os.sysconf("SC_CLK_TCK")


def window(
    samples: list[tuple[float, int, float]], low: float, high: float
) -> tuple[tuple[float, float], tuple[float, float], int] | None:
    """The 10 %-90 % window, conservatively: from the last sample below ``low`` to the first
    at or above ``high`` (no interpolation, so output that arrives in big jumps cannot fake
    a short window); ((t, cpu) start, (t, cpu) end, samples inside)."""
    below = [i for i, s in enumerate(samples) if s[1] < low]
    above = [i for i, s in enumerate(samples) if s[1] >= high]
    if not below or not above:
        return None
    i, j = below[-1], above[0]
    return (samples[i][0], samples[i][2]), (samples[j][0], samples[j][2]), j - i
