"""A subset of the differential scenarios through a real App on a broker (issue 23, Deliver 4).

The joins fed from two topics, compared with Kafka Streams 4.3.1's driver output (the oracle):
per output topic, the records (key, value, timestamp) in the order they came out; the step
after which each came out is not compared (a broker run cannot see it). ``stepwise`` waits
until the app is idle after each input, as Kafka's driver does; ``prefilled`` puts every input
on the broker first, so the PartitionGroup must pick records across the topics by timestamp
(scenarios without internal topics and with strictly increasing input timestamps). Each runs on
the embedded broker and, marked ``kafka``, on Apache Kafka (``any_broker``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.differential.compare import first_difference, listing
from tests.differential.on_broker import comparable, feedable, run_on_broker
from tests.differential.oracle import Oracle
from tests.differential.scenarios import SCENARIO_DIR, known_differences, load

pytestmark = pytest.mark.differential

STEPWISE = (
    "stream-stream-join",
    "stream-stream-left-join",
    "stream-stream-outer-join",
    "stream-table-join",
    "stream-table-join-out-of-order",
    "stream-table-join-repartitioned",
    "table-table-join-map-values",
    "fk-join",
)
PREFILLED = (
    "stream-table-join",
    "stream-table-left-join",
    "stream-stream-outer-join-cancelled",
    "table-table-join-map-values",
)
CASES = [(n, False) for n in STEPWISE] + [(n, True) for n in PREFILLED]


def test_the_subset_is_runnable_and_matches_in_the_driver() -> None:
    known = known_differences()
    for name, prefilled in CASES:
        scenario = load(SCENARIO_DIR / "joins" / f"{name}.json")
        assert name not in known, f"{name} differs in the driver already"
        assert feedable(scenario, prefilled), f"{name} cannot be fed (prefilled={prefilled})"


@pytest.mark.parametrize(
    ("name", "prefilled"),
    CASES,
    ids=[f"{n}-{'prefilled' if p else 'stepwise'}" for n, p in CASES],
)
def test_scenario_on_broker(
    name: str, prefilled: bool, oracle: Oracle, any_broker: object, tmp_path: Path
) -> None:
    scenario = load(SCENARIO_DIR / "joins" / f"{name}.json")
    expected = comparable(oracle.run(scenario))
    assert expected, f"{name} has no output in Kafka Streams"
    bootstrap = any_broker.bootstrap  # type: ignore[attr-defined]
    actual = run_on_broker(scenario, bootstrap, tmp_path / "state", prefilled=prefilled)
    diff = first_difference(expected, actual)
    assert diff is None, f"{name} on the broker: {diff}\n{listing(expected, actual)}"
