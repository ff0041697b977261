"""Every fixed scenario through Kafka Streams 4.3.1 and streamrt, compared record by record.

Strict both ways: a scenario not in ``known_differences.toml`` must match exactly (topic, key,
value, timestamp, and the input step after which each record came out); one in the list must
still differ, so a fix is noticed and the entry removed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.differential import streamrt_side
from tests.differential.compare import first_difference, listing
from tests.differential.oracle import Oracle
from tests.differential.scenarios import known_differences, load, scenario_files

pytestmark = pytest.mark.differential

KNOWN = known_differences()


def test_known_differences_name_existing_scenarios() -> None:
    names = {p.stem for p in scenario_files()}
    assert sorted(set(KNOWN) - names) == []
    assert len(names) == len(scenario_files()), "two scenario files share a name"


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.stem)
def test_scenario(path: Path, oracle: Oracle) -> None:
    scenario = load(path)
    name = scenario["name"]
    expected = oracle.run(scenario)
    broken = [e for e in expected if e.error is not None]
    assert not broken, f"Kafka Streams cannot run scenario {name}: {broken[0].error}"
    if path.parent.name != "found":  # a shrunk counterexample may rightly expect nothing
        assert expected, f"{name} has no output in Kafka Streams: it would compare nothing"
    actual = streamrt_side.run(scenario)
    diff = first_difference(expected, actual)
    reason = KNOWN.get(name)
    if reason is None:
        assert diff is None, (
            f"{name} differs from Kafka Streams 4.3.1: {diff}\n{listing(expected, actual)}"
        )
    else:
        assert diff is not None, (
            f"{name} now matches Kafka Streams: remove it from known_differences.toml "
            f"(listed as: {reason})"
        )
