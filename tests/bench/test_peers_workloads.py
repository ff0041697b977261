"""The peers benchmark's verification refuses wrong output and accepts at-least-once output."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _peers_workloads import (
    expected_outputs,
    generate,
    stateless_keep,
    stateless_map,
    verify,
    words,
)

from streamrt.deploy.session_profiles import add_click, new_profile

Output = list[tuple[bytes | None, bytes | None]]


def correct_output(workload: str, records: int) -> Output:
    """What a correct one-output-per-update contender writes, in input order."""
    out: Output = []
    counts: Counter[str] = Counter()
    profiles: dict[str, dict[str, object]] = {}
    for key, raw in generate(workload, records):
        if workload == "stateless":
            value = json.loads(raw)
            if stateless_keep(value):
                out.append((key, json.dumps(stateless_map(value)).encode()))
        elif workload == "wordcount":
            for word in words(raw.decode()):
                counts[word] += 1
                out.append((word.encode(), json.dumps(counts[word]).encode()))
        else:
            user = key.decode()
            profiles[user] = add_click(user, json.loads(raw), profiles.get(user) or new_profile())
            out.append((key, json.dumps(profiles[user]).encode()))
    return out


@pytest.mark.parametrize("workload", ["stateless", "wordcount", "sessions"])
def test_correct_output_passes_and_counts_match(workload: str) -> None:
    out = correct_output(workload, 400)
    assert len(out) == expected_outputs(workload, 400)
    assert verify(workload, 400, out) == ""
    # at-least-once: a replayed prefix followed by the rest is still correct
    assert verify(workload, 400, out[:50] + out) == ""


@pytest.mark.parametrize("workload", ["stateless", "wordcount", "sessions"])
def test_missing_or_wrong_output_is_refused(workload: str) -> None:
    out = correct_output(workload, 400)
    assert verify(workload, 400, out[: len(out) // 2]) != ""
    key, raw = out[-1]
    value = json.loads(raw or b"null")
    if isinstance(value, dict):
        value["cents" if workload == "stateless" else "clicks"] += 1
    else:
        value += 1
    wrong = [*out[:-1], (key, json.dumps(value).encode())]
    assert "wrong final value" in verify(workload, 400, wrong)
