"""One SparkSession per pytest process (JVM start-up costs 5-15 s); Kafka helpers are in
``tests/kafka_helpers.py``.

The session also carries Spark's own Kafka connector (``spark-sql-kafka-0-10`` from Maven
Central, ``streamrt.spark.kafka_connector``) when it can be had: jars must be given before the
JVM starts. Without Maven Central, java or mvn, only the tests that need it skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from streamrt.spark.kafka_connector import ConnectorUnavailable, connector_conf, connector_version
from streamrt.spark.session import get_session

_CONNECTOR: dict[str, str] = {}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    conf = {
        # Smaller and quicker-starting JVM: tests move little data.
        "spark.driver.memory": "512m",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    try:
        conf.update(connector_conf(timeout=300))
        _CONNECTOR["version"] = connector_version()
    except ConnectorUnavailable as exc:
        _CONNECTOR["unavailable"] = str(exc)
    session = get_session(app_name="streamrt-tests", conf=conf)
    yield session
    session.stop()


@pytest.fixture
def kafka_connector(spark: SparkSession) -> str:
    """The spark-sql-kafka-0-10 version on the session's classpath (skips when unavailable)."""
    if "unavailable" in _CONNECTOR:
        pytest.skip(f"Spark's Kafka connector unavailable: {_CONNECTOR['unavailable']}")
    return _CONNECTOR["version"]
