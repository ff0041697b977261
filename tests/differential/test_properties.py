"""Property-based scenarios: Hypothesis draws topologies and inputs per operator family, both
sides run them (in the session's one JVM), and any difference is shrunk and saved as a fixed
scenario under ``scenarios/found/`` (commit it, and list it in known_differences.toml until
it is fixed).

The budget is small in the suite: ``STREAMRT_DIFF_EXAMPLES`` (default 15) examples a family;
a longer run: ``STREAMRT_DIFF_EXAMPLES=500``. Families listed under ``[properties]`` in
known_differences.toml differ today and are skipped unless ``STREAMRT_DIFF_PROPERTIES=all``.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.differential import streamrt_side
from tests.differential.compare import first_difference, listing
from tests.differential.oracle import Oracle
from tests.differential.properties import FAMILIES, scenario_name
from tests.differential.scenarios import KNOWN_FILE, SCENARIO_DIR, save

pytestmark = pytest.mark.differential

EXAMPLES = int(os.environ.get("STREAMRT_DIFF_EXAMPLES", "15"))
RUN_ALL = os.environ.get("STREAMRT_DIFF_PROPERTIES") == "all"
FOUND_DIR = SCENARIO_DIR / "found"


def _differing_families() -> dict[str, str]:
    with KNOWN_FILE.open("rb") as f:
        table: dict[str, str] = tomllib.load(f).get("properties", {})
    return table


DIFFERING = _differing_families()


def _differs(scenario: dict[str, Any], oracle: Oracle) -> bool:
    expected = oracle.run(scenario)
    if any(e.error is not None for e in expected):
        return False
    return first_difference(expected, streamrt_side.run(scenario)) is not None


def _drop_steps(scenario: dict[str, Any], oracle: Oracle) -> dict[str, Any]:
    """Shrink further than Hypothesis can (its lists keep a minimum length): drop input steps
    one at a time while the scenario still differs."""
    steps = list(scenario["steps"])
    i = 0
    while i < len(steps) and len(steps) > 1:
        candidate = {**scenario, "steps": steps[:i] + steps[i + 1 :]}
        if _differs(candidate, oracle):
            steps = candidate["steps"]
        else:
            i += 1
    family = scenario["name"].rsplit("-", 1)[0]
    name = scenario_name(family, scenario["topology"], steps)
    return {**scenario, "name": name, "steps": steps}


def test_listed_families_exist() -> None:
    assert sorted(set(DIFFERING) - set(FAMILIES)) == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_matches_kafka_streams(family: str, oracle: Oracle) -> None:
    if family in DIFFERING and not RUN_ALL:
        pytest.skip(f"{family} differs today ({DIFFERING[family]}); STREAMRT_DIFF_PROPERTIES=all")
    failing: list[dict[str, Any]] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(FAMILIES[family]())
    def check(scenario: dict[str, Any]) -> None:
        expected = oracle.run(scenario)
        broken = [e.error for e in expected if e.error is not None]
        if broken:  # Kafka Streams refused the drawn topology (e.g. a window it rejects)
            return
        actual = streamrt_side.run(scenario)
        diff = first_difference(expected, actual)
        if diff is not None:
            failing.append(scenario)  # the last one is Hypothesis' shrunk example
            raise AssertionError(f"{diff}\n{listing(expected, actual)}")

    try:
        check()
    except AssertionError as exc:
        path = save(_drop_steps(failing[-1], oracle), FOUND_DIR)
        raise AssertionError(
            f"{family}: streamrt differs from Kafka Streams; the shrunk scenario is saved as "
            f"{path.relative_to(SCENARIO_DIR.parent)}:\n{exc}"
        ) from exc
