"""``group.protocol=streams`` on Apache Kafka 4.3.1 (marker ``kafka``): the runtime as a
KIP-1071 client of Kafka's own streams-group coordinator.

A dynamic two-instance app splits the tasks and counts exactly; a static one
(``group.instance.id``) gets the clear error Kafka 4.3.1 calls for (it refuses static streams
members: INVALID_REQUEST), naming the version that takes them (4.4, KAFKA-20169), and the
instance stops in ERROR instead of retrying.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamrt.runtime.instance.metadata import AppState
from tests.apache_kafka.support import clean_slate
from tests.kafka_helpers import produce, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.test_membership_integration import (
    counts,
    events,
    expected,
    setup_topics,
)
from tests.runtime.test_streams_protocol_integration import settings, split, tasks

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


@pytest.fixture
def kafka_bootstrap(apache_kafka: object) -> Iterator[str]:
    bootstrap: str = apache_kafka.bootstrap  # type: ignore[attr-defined]
    yield bootstrap
    # the instances left the group; the streams group goes first, as the shared clean-up
    # describes groups with the classic API only
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def deleted() -> bool:
        try:
            admin.delete_consumer_groups(["counting"], request_timeout=30)["counting"].result(30)
        except Exception as exc:  # GROUP_ID_NOT_FOUND once gone; NON_EMPTY_GROUP meanwhile
            return "GROUP_ID_NOT_FOUND" in str(exc)
        return True

    wait_until(deleted, timeout=60, what="the streams group deleted")
    clean_slate(bootstrap)


def test_dynamic_instances_split_the_tasks_on_apache_kafka(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    setup_topics(kafka_bootstrap)
    produce(kafka_bootstrap, "events", events(160))
    a = make_app(settings(kafka_bootstrap, tmp_path / "a"))
    b = make_app(settings(kafka_bootstrap, tmp_path / "b"))
    a.start()
    b.start()
    try:
        wait_until(lambda: split(a, b), timeout=120, what="8 tasks split over 2 instances")
        assert (len(tasks(a)), len(tasks(b))) == (4, 4)
        wait_until(lambda: counts(kafka_bootstrap) == expected(160), what="counts")
    finally:
        a.stop()
        b.stop()


def test_static_instance_gets_a_clear_error_on_apache_kafka(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    setup_topics(kafka_bootstrap)
    app = make_app(settings(kafka_bootstrap, tmp_path / "a", "inst-a"))
    app.start()
    try:
        wait_until(lambda: app.state is AppState.ERROR, timeout=120, what="the instance in ERROR")
        message = str(app.fatal_error)
        assert "static members" in message and "group.instance.id='inst-a-thread-1'" in message
        assert "Apache Kafka 4.4 (KAFKA-20169)" in message
    finally:
        app.stop()
