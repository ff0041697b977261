"""schemathesis against one instance's OpenAPI document: no input makes it answer 5xx."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import TOKEN, running, start_instance, url

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api_schema(
    fuzz_broker: BrokerThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[schemathesis.BaseSchema]:
    bootstrap = fuzz_broker.bootstrap
    create_topic(bootstrap, "events", 2)
    create_topic(bootstrap, "event-counts-out", 2)
    state: Path = tmp_path_factory.mktemp("fuzz-state")
    app = start_instance(bootstrap, state, "web-1", threads=1)
    try:
        wait_until(lambda: running(app, partitions=2), 60, "instance running")
        produce(bootstrap, "events", [(b"k1", b"e"), (b"k2", b"e")])
        yield schemathesis.openapi.from_url(url(app) + "/openapi.json")
    finally:
        app.stop()


def test_no_server_errors(api_schema: schemathesis.BaseSchema) -> None:
    """Each operation with bounded generated inputs (schemathesis' pytest plugin does not load
    under this pytest, so the operations' hypothesis strategies are driven directly)."""
    results = list(api_schema.get_all_operations())
    operations = [r.ok() for r in results if isinstance(r, Ok)]
    assert len(operations) == len(results)  # the document is valid
    assert len(operations) >= 7
    statuses: list[int] = []
    for operation, mode in itertools.product(operations, GenerationMode):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def no_5xx(case: schemathesis.Case) -> None:
            response = case.call_and_validate(checks=[not_a_server_error])
            statuses.append(response.status_code)
            # again with the right token, so bodies get past authentication too
            case.headers["Authorization"] = f"Bearer {TOKEN}"
            response = case.call_and_validate(checks=[not_a_server_error])
            statuses.append(response.status_code)

        try:
            no_5xx()
        except Unsatisfiable:  # negative mode on an operation with no inputs to break
            assert mode is GenerationMode.NEGATIVE
    assert len(statuses) >= 3 * len(operations)
    assert {200, 401, 403, 404, 422} <= set(statuses)
