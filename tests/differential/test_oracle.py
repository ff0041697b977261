"""The oracle survives its JVM's death: one restart, and a clear error when that fails too.

One JVM serves every differential test of a worker; before this, one death turned all the
worker's later oracle tests into BrokenPipe errors with no word of why.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from tests.differential import oracle as oracle_module
from tests.differential.conftest import started_oracle
from tests.differential.oracle import Oracle, OracleUnavailable
from tests.differential.scenarios import load, scenario_files

pytestmark = pytest.mark.differential


@pytest.fixture
def own_oracle() -> Iterator[Oracle]:
    """A JVM of the test's own, as it is killed."""
    yield from started_oracle()


def _scenario() -> dict[str, object]:
    path = next(p for p in scenario_files() if p.parent.name == "stateless")
    return load(path)


def test_a_killed_jvm_is_restarted_and_the_scenario_answered(own_oracle: Oracle) -> None:
    scenario = _scenario()
    before = own_oracle.run(scenario)
    assert before and all(e.error is None for e in before)
    first_pid = own_oracle.pid
    os.kill(first_pid, signal.SIGKILL)
    with pytest.warns(RuntimeWarning, match=r"exit code -9"):
        again = own_oracle.run(scenario)
    assert again == before
    assert own_oracle.restarts == 1 and own_oracle.pid != first_pid
    assert own_oracle.run(scenario) == before  # the new JVM serves the next ones too


def test_a_jvm_that_dies_twice_is_reported_with_its_stderr(
    own_oracle: Oracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the restarted JVM cannot start: a heap smaller than Java's minimum
    monkeypatch.setattr(oracle_module, "JVM_FLAGS", ("-Xmx1k",))
    os.kill(own_oracle.pid, signal.SIGKILL)
    with (
        pytest.warns(RuntimeWarning, match=r"exit code -9"),
        pytest.raises(
            OracleUnavailable, match=r"died twice.*initialization of VM.*exit code 1.*heap"
        ),
    ):
        own_oracle.run(_scenario())
