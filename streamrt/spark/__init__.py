"""Spark integration: Kafka-protocol topics and streamrt state stores as DataFrames.

``register(spark)`` adds the ``streamrt`` (topics) and ``streamrt-state`` (RocksDB stores)
data sources; :func:`streamrt.spark.session.get_session` builds a ready local session.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from streamrt.spark.source import StreamrtDataSource
from streamrt.spark.state_source import StreamrtStateDataSource

__all__ = ("StreamrtDataSource", "StreamrtStateDataSource", "register")


def register(spark: SparkSession) -> None:
    """Register both data sources with ``spark`` (idempotent: re-registering replaces)."""
    spark.dataSource.register(StreamrtDataSource)
    spark.dataSource.register(StreamrtStateDataSource)
