"""The ``streamrt-state`` data source: an application's RocksDB state stores as rows.

Layout (see ``streamrt/state/rocksdb.py``): ``<state.dir>/<application.id>/<task id>/<store>``
is one RocksDB per task, data in the default column family, the changelog offset in the
``__metadata__`` column family. Stores are opened read-only (no lock, safe beside a running
app) and only the default column family is read, so the metadata never shows up as rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import rocksdict
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from streamrt.errors import ConfigError, StreamrtError

__all__ = (
    "STATE_ARROW_SCHEMA",
    "STATE_SCHEMA",
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
STATE_ARROW_SCHEMA = pa.schema(
    [
        ("task_id", pa.string()),
        ("partition", pa.int32()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)
_BATCH_ROWS = 10_000


class StateStoreError(StreamrtError):
    """A store directory could not be opened or read; the message names its path."""


@dataclass(frozen=True)
class StoreDir(InputPartition):
    """One task's copy of the store: the unit one Spark task reads."""

    task_id: str
    path: str

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
        StoreDir(task.name, str(task / store))
        for task in sorted(app_dir.iterdir())
        if (task / store).is_dir()
    ]
    if not found:
        raise ConfigError(f"option store: no task directory under {app_dir} holds store {store!r}")
    for store_dir in found:
        _open_read_only(store_dir.path).close()
    return found


def read_store(store_dir: StoreDir, batch_rows: int = _BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The default column family's key/values as Arrow batches, in key order."""
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
                    yield _state_batch(store_dir, keys, values)
                    keys, values = [], []
        except StateStoreError:
            raise
        except Exception as exc:  # corrupt blocks, or entries rocksdict cannot decode
            raise StateStoreError(f"state store {store_dir.path} is undecodable: {exc}") from None
        if keys:
            yield _state_batch(store_dir, keys, values)
    finally:
        db.close()


def _state_batch(store_dir: StoreDir, keys: list[bytes], values: list[bytes]) -> pa.RecordBatch:
    n = len(keys)
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(store_dir.task_id, pa.string()), n),
            pa.repeat(pa.scalar(store_dir.partition, pa.int32()), n),
            pa.array(keys, type=pa.binary()),
            pa.array(values, type=pa.binary()),
        ],
        schema=STATE_ARROW_SCHEMA,
    )


def _required(options: Mapping[str, str], name: str) -> str:
    value = options.get(name)
    if not value:
        raise ConfigError(f"option {name} is required")
    return str(value)


class StreamrtStateReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.stores = find_store_dirs(
            _required(options, "state.dir"),
            _required(options, "application.id"),
            _required(options, "store"),
        )

    def partitions(self) -> list[InputPartition]:
        return list(self.stores)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StoreDir), partition
        return read_store(partition)


class StreamrtStateDataSource(DataSource):
    """``spark.read.format("streamrt-state")``: options ``state.dir``, ``application.id``,
    ``store``; rows ``(task_id, partition, key, value)``."""

    @classmethod
    def name(cls) -> str:
        return "streamrt-state"

    def schema(self) -> StructType:
        return STATE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return StreamrtStateReader(self.options)
