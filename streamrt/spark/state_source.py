"""The ``streamrt-state`` data source: an application's RocksDB state stores as rows.

Layout (see ``streamrt/state/rocksdb.py``): ``<state.dir>/<application.id>/<task id>/<store>``
is one RocksDB per task, data in the default column family, the changelog offset in the
``__metadata__`` column family. Stores are opened read-only (no lock, safe beside a running
app) and only the default column family is read, so the metadata never shows up as rows.

Table and aggregate stores are timestamped (``streamrt/state/timestamped.py``): a
``<store>.timestamped`` marker beside the store says each value is ``<8-byte BE timestamp><value>``.
Such a store reads as the plain value plus a ``timestamp`` column, typed as the Kafka source's
(Spark timestamp, null when unknown), so users never see the prefix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import rocksdict
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from streamrt.errors import ConfigError, StreamrtError
from streamrt.state.timestamped import NO_TIMESTAMP, decode

__all__ = (
    "STATE_ARROW_SCHEMA",
    "STATE_SCHEMA",
    "TIMESTAMPED_STATE_ARROW_SCHEMA",
    "TIMESTAMPED_STATE_SCHEMA",
    "StateStoreError",
    "StoreDir",
    "StreamrtStateDataSource",
    "find_store_dirs",
    "read_store",
)

STATE_SCHEMA = StructType(
    [
        StructField("task_id", StringType()),
        StructField("partition", IntegerType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
    ]
)
TIMESTAMPED_STATE_SCHEMA = StructType(
    [*STATE_SCHEMA.fields, StructField("timestamp", TimestampType())]
)
STATE_ARROW_SCHEMA = to_arrow_schema(STATE_SCHEMA, timezone="UTC")
# the timestamp typed as the Kafka source's column
TIMESTAMPED_STATE_ARROW_SCHEMA = to_arrow_schema(TIMESTAMPED_STATE_SCHEMA, timezone="UTC")
_BATCH_ROWS = 10_000


class StateStoreError(StreamrtError):
    """A store directory could not be opened or read; the message names its path."""


@dataclass(frozen=True)
class StoreDir(InputPartition):
    """One task's copy of the store: the unit one Spark task reads."""

    task_id: str
    path: str
    timestamped: bool = False  # the store has its ``<store>.timestamped`` marker

    @property
    def partition(self) -> int | None:
        """Kafka Streams task ids are ``<subtopology>_<partition>``; other ids have none."""
        _, _, tail = self.task_id.rpartition("_")
        return int(tail) if tail.isdigit() else None


def _open_read_only(path: str) -> rocksdict.Rdict:
    try:
        return rocksdict.Rdict(
            path, rocksdict.Options(raw_mode=True), access_type=rocksdict.AccessType.read_only()
        )
    except Exception as exc:
        raise StateStoreError(f"state store {path} is not a readable RocksDB: {exc}") from None


def find_store_dirs(state_dir: str, application_id: str, store: str) -> list[StoreDir]:
    """Every ``<task>/<store>`` under the application's directory, checked to open read-only."""
    app_dir = Path(state_dir) / application_id
    if not Path(state_dir).is_dir():
        raise ConfigError(f"option state.dir: {state_dir} is not a directory")
    if not app_dir.is_dir():
        raise ConfigError(f"option application.id: no directory {app_dir}")
    found = [
        StoreDir(task.name, str(task / store), (task / f"{store}.timestamped").exists())
        for task in sorted(app_dir.iterdir())
        if (task / store).is_dir()
    ]
    if not found:
        raise ConfigError(f"option store: no task directory under {app_dir} holds store {store!r}")
    for store_dir in found:
        _open_read_only(store_dir.path).close()
    return found


def read_store(
    store_dir: StoreDir, batch_rows: int = _BATCH_ROWS, timestamp_column: bool | None = None
) -> Iterator[pa.RecordBatch]:
    """The default column family's key/values as Arrow batches, in key order.

    A timestamped store's values come without their prefix. ``timestamp_column`` (default: the
    store's marker) adds the ``timestamp`` column, null for a store without timestamps: a read
    over several tasks has one schema even while an upgrade has marked only some of them.
    """
    with_timestamp = store_dir.timestamped if timestamp_column is None else timestamp_column
    db = _open_read_only(store_dir.path)
    try:
        keys: list[bytes] = []
        values: list[bytes] = []
        try:
            for key, value in db.items():
                if not isinstance(key, bytes) or not isinstance(value, bytes):
                    raise StateStoreError(
                        f"state store {store_dir.path} holds a non-bytes entry {key!r}"
                    )
                keys.append(key)
                values.append(value)
                if len(keys) >= batch_rows:
                    yield _state_batch(store_dir, keys, values, with_timestamp)
                    keys, values = [], []
        except StateStoreError:
            raise
        except Exception as exc:  # corrupt blocks, or entries rocksdict cannot decode
            raise StateStoreError(f"state store {store_dir.path} is undecodable: {exc}") from None
        if keys:
            yield _state_batch(store_dir, keys, values, with_timestamp)
    finally:
        db.close()


def _split_timestamps(store_dir: StoreDir, raw: list[bytes]) -> tuple[list[bytes], list[int]]:
    """The values without their 8-byte prefix, and the timestamps it held."""
    values: list[bytes] = []
    stamps: list[int] = []
    for entry in raw:
        if len(entry) < 8:
            raise StateStoreError(
                f"state store {store_dir.path} is marked timestamped but holds a value of "
                f"{len(entry)} bytes, shorter than its 8-byte timestamp"
            )
        value, timestamp = decode(entry)
        values.append(value)
        stamps.append(timestamp)
    return values, stamps


def _state_batch(
    store_dir: StoreDir, keys: list[bytes], raw: list[bytes], with_timestamp: bool
) -> pa.RecordBatch:
    n = len(keys)
    values, stamps = (
        _split_timestamps(store_dir, raw) if store_dir.timestamped else (raw, [NO_TIMESTAMP] * n)
    )
    columns = [
        pa.repeat(pa.scalar(store_dir.task_id, pa.string()), n),
        pa.repeat(pa.scalar(store_dir.partition, pa.int32()), n),
        pa.array(keys, type=pa.binary()),
        pa.array(values, type=pa.binary()),
    ]
    if not with_timestamp:
        return pa.RecordBatch.from_arrays(columns, schema=STATE_ARROW_SCHEMA)
    micros = [None if ms < 0 else ms * 1000 for ms in stamps]  # -1: unknown, as Kafka's
    columns.append(pa.array(micros, type=pa.timestamp("us", tz="UTC")))
    return pa.RecordBatch.from_arrays(columns, schema=TIMESTAMPED_STATE_ARROW_SCHEMA)


def _required(options: Mapping[str, str], name: str) -> str:
    value = options.get(name)
    if not value:
        raise ConfigError(f"option {name} is required")
    return str(value)


def _store_dirs(options: Mapping[str, str]) -> list[StoreDir]:
    return find_store_dirs(
        _required(options, "state.dir"),
        _required(options, "application.id"),
        _required(options, "store"),
    )


class StreamrtStateReader(DataSourceReader):
    """Reads each task's store; the ``timestamp`` column is there when the schema has it."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.stores = _store_dirs(options)
        self.timestamp_column = "timestamp" in schema.fieldNames()

    def partitions(self) -> list[InputPartition]:
        return list(self.stores)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StoreDir), partition
        return read_store(partition, timestamp_column=self.timestamp_column)


class StreamrtStateDataSource(DataSource):
    """``spark.read.format("streamrt-state")``: options ``state.dir``, ``application.id``,
    ``store``; rows ``(task_id, partition, key, value)``, plus ``timestamp`` when a task's copy
    of the store is timestamped (its ``<store>.timestamped`` marker)."""

    @classmethod
    def name(cls) -> str:
        return "streamrt-state"

    def schema(self) -> StructType:
        if any(store.timestamped for store in _store_dirs(self.options)):
            return TIMESTAMPED_STATE_SCHEMA
        return STATE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return StreamrtStateReader(self.options, schema)
