"""One SparkSession per pytest process (JVM start-up costs 5-15 s); Kafka helpers are in
``tests/kafka_helpers.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from streamrt.spark.session import get_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_session(
        app_name="streamrt-tests",
        conf={
            # Smaller and quicker-starting JVM: tests move little data.
            "spark.driver.memory": "512m",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        },
    )
    yield session
    session.stop()
