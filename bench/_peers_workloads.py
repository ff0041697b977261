"""The three workloads of ``bench/peers_throughput.py``: input, per-record work, verification.

Pure Python with no framework import, so every contender (streamrt, Quix Streams in its own
venv, faust-streaming, the bare loops) runs exactly the same per-record functions, and the
harness checks every contender's output against the same expectation.

- ``stateless``: JSON clicks; drop kind ``d`` (a quarter), map to a new document, produce.
- ``wordcount``: lines of words; re-key by word (repartition), count, emit every new count.
- ``sessions``: clicks keyed by user folded into a ~2.3 KB profile
  (``streamrt/deploy/session_profiles.py``).

Every workload emits one output per (kept) input update, as Quix Streams does and as streamrt
does without a record cache, so progress is the sink topic's end offsets.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from streamrt.deploy.session_profiles import add_click, new_profile

__all__ = (
    "WORDS_PER_LINE",
    "WORKLOADS",
    "expected_outputs",
    "generate",
    "stateless_keep",
    "stateless_map",
    "verify",
    "words",
)

WORKLOADS = ("stateless", "wordcount", "sessions")
WORDS_PER_LINE = 4
VOCABULARY = 5000
STATELESS_KEYS = 1000


def stateless_keep(value: dict[str, Any]) -> bool:
    return bool(value["kind"] != "d")


def stateless_map(value: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": value["id"],
        "user": value["user"],
        "cents": value["amount"] * 100,
        "kind": value["kind"].upper(),
    }


def words(line: str) -> list[str]:
    return line.lower().split()


def _users(records: int) -> int:
    return max(1, records // 5)


def generate(workload: str, records: int) -> Iterator[tuple[bytes, bytes]]:
    """The input, as (key, value) bytes, identical for every contender."""
    if workload == "stateless":
        for i in range(records):
            user = f"u{i % STATELESS_KEYS:05d}"
            value = {"id": i, "user": user, "amount": i % 1000, "kind": "abcd"[i % 4], "x": "y"}
            yield user.encode(), json.dumps(value).encode()
    elif workload == "wordcount":
        for i in range(records):
            line = " ".join(
                f"W{(i * 31 + j * 17 + (i // 7) * j) % VOCABULARY}" for j in range(WORDS_PER_LINE)
            )
            yield str(i).encode(), line.encode()
    elif workload == "sessions":
        users = _users(records)
        for i in range(records):
            user = f"u{i % users:07d}"
            click = {"user": user, "page": f"/p/{i % 97}", "ts": i}
            yield user.encode(), json.dumps(click).encode()
    else:
        raise ValueError(f"unknown workload {workload!r}")


def expected_outputs(workload: str, records: int) -> int:
    """How many records the sink holds once every input is processed exactly once."""
    if workload == "stateless":
        return sum(1 for i in range(records) if i % 4 != 3)
    if workload == "wordcount":
        return records * WORDS_PER_LINE
    return records


def _expected_state(workload: str, records: int) -> dict[str, Any]:
    if workload == "stateless":
        out: dict[str, Any] = {}
        for key, raw in generate(workload, records):
            value = json.loads(raw)
            if stateless_keep(value):
                out[str(value["id"])] = (key.decode(), stateless_map(value))
        return out
    if workload == "wordcount":
        counts: Counter[str] = Counter()
        for _key, line in generate(workload, records):
            counts.update(words(line.decode()))
        return dict(counts)
    profiles: dict[str, Any] = {}
    for key, raw in generate(workload, records):
        user = key.decode()
        profiles[user] = add_click(user, json.loads(raw), profiles.get(user) or new_profile())
    return profiles


def verify(workload: str, records: int, output: Iterable[tuple[bytes | None, bytes | None]]) -> str:
    """``""`` when the sink's records (in offset order per partition) match the input exactly
    at-least-once-wise, else a description of the first problems found."""
    expected = _expected_state(workload, records)
    seen: dict[str, Any] = {}
    problems: list[str] = []
    total = 0
    for key, raw in output:
        total += 1
        if key is None or raw is None:
            problems.append(f"record with null key/value: {key!r}")
            continue
        value = json.loads(raw)
        if workload == "stateless":
            seen[str(value.get("id"))] = (key.decode(), value)
        else:
            seen[key.decode()] = value  # the last value per key is the final one
    missing = [k for k in expected if k not in seen]
    extra = [k for k in seen if k not in expected]
    wrong = [k for k in expected if k in seen and seen[k] != expected[k]]
    if missing:
        problems.append(f"{len(missing)} keys missing (e.g. {missing[:3]})")
    if extra:
        problems.append(f"{len(extra)} unexpected keys (e.g. {extra[:3]})")
    if wrong:
        k = wrong[0]
        problems.append(
            f"{len(wrong)} keys with a wrong final value (e.g. {k!r}: "
            f"{str(seen[k])[:80]} != {str(expected[k])[:80]})"
        )
    if total < expected_outputs(workload, records):
        problems.append(f"{total} outputs < {expected_outputs(workload, records)} expected")
    return "; ".join(problems[:4])
