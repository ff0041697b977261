"""The ``streamrt`` data source: Kafka-protocol topics as Spark batch and streaming DataFrames."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from streamrt.spark.arrow import RECORD_SCHEMA
from streamrt.spark.options import parse_sink_options, parse_source_options
from streamrt.spark.reader import StreamrtBatchReader, StreamrtStreamReader
from streamrt.spark.writer import StreamrtBatchWriter, StreamrtStreamWriter

__all__ = ("StreamrtDataSource",)


class StreamrtDataSource(DataSource):
    """``spark.read.format("streamrt")`` and friends; options as in Spark's Kafka source."""

    @classmethod
    def name(cls) -> str:
        return "streamrt"

    def schema(self) -> StructType:
        return RECORD_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return StreamrtBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamrtStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return StreamrtBatchWriter(parse_sink_options(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return StreamrtStreamWriter(parse_sink_options(self.options), schema)
