"""The state reader over real RocksDB stores written by streamrt's RocksDBStore (no Spark)."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
import rocksdict

from streamrt.errors import ConfigError
from streamrt.spark.state_source import StateStoreError, StoreDir, find_store_dirs, read_store
from streamrt.state import ROCKS_DB, StateManager, TopicPartition
from streamrt.state.rocksdb import RocksDBStore
from streamrt.state.timestamped import NO_TIMESTAMP


def write_store(root: Path, task_id: str, items: dict[bytes, bytes], offset: int = 5) -> None:
    store = RocksDBStore("counts", root / "app" / task_id / "counts")
    store.open()
    for key, value in items.items():
        store.put(key, value)
    store.flush(offset)
    store.close()


def test_reads_every_task_and_skips_changelog_metadata(tmp_path: Path) -> None:
    write_store(tmp_path, "0_0", {b"a": b"1", b"b": b"2"})
    write_store(tmp_path, "0_3", {b"c": b"3"})
    (tmp_path / "app" / "1_0").mkdir()  # a task without this store
    dirs = find_store_dirs(str(tmp_path), "app", "counts")
    assert [(d.task_id, d.partition) for d in dirs] == [("0_0", 0), ("0_3", 3)]
    rows = [row for d in dirs for batch in read_store(d) for row in batch.to_pylist()]
    assert rows == [
        {"task_id": "0_0", "partition": 0, "key": b"a", "value": b"1"},
        {"task_id": "0_0", "partition": 0, "key": b"b", "value": b"2"},
        {"task_id": "0_3", "partition": 3, "key": b"c", "value": b"3"},
    ]


def test_batches_are_bounded(tmp_path: Path) -> None:
    write_store(tmp_path, "0_0", {bytes([i]): b"v" for i in range(25)})
    (store_dir,) = find_store_dirs(str(tmp_path), "app", "counts")
    assert [b.num_rows for b in read_store(store_dir, batch_rows=10)] == [10, 10, 5]


def test_task_without_partition_suffix_has_null_partition() -> None:
    assert StoreDir("global", "/x").partition is None


@pytest.mark.parametrize(
    ("app", "store", "message"),
    [("nope", "counts", "option application.id"), ("app", "other", "option store")],
)
def test_missing_dirs_name_the_option(tmp_path: Path, app: str, store: str, message: str) -> None:
    write_store(tmp_path, "0_0", {b"a": b"1"})
    with pytest.raises(ConfigError, match=message):
        find_store_dirs(str(tmp_path), app, store)


def test_corrupt_store_names_its_path(tmp_path: Path) -> None:
    broken = tmp_path / "app" / "0_1" / "counts"
    broken.mkdir(parents=True)
    (broken / "CURRENT").write_text("garbage")
    with pytest.raises(StateStoreError, match=r"0_1/counts is not a readable RocksDB"):
        find_store_dirs(str(tmp_path), "app", "counts")


def test_non_raw_store_is_reported_undecodable(tmp_path: Path) -> None:
    db = rocksdict.Rdict(str(tmp_path / "app" / "0_0" / "counts"))  # pickled-object mode
    db["k"] = 1
    db.close()
    (store_dir,) = find_store_dirs(str(tmp_path), "app", "counts")
    with pytest.raises(StateStoreError, match="0_0/counts"):
        list(read_store(store_dir))


def write_timestamped_store(root: Path, task_id: str, rows: list[tuple[bytes, bytes, int]]) -> None:
    """A table store as the runtime keeps it: marked, each row with its timestamp."""
    state = StateManager(task_id, root / "app" / task_id)
    changelog = TopicPartition("app-counts-changelog", 0)
    state.register("counts", changelog, ROCKS_DB, timestamped=True)
    state.open()
    state.restore_batch(changelog, rows, 1)
    state.flush({changelog: 1})
    state.close()


def test_timestamped_store_gives_plain_values_and_timestamps(tmp_path: Path) -> None:
    write_timestamped_store(tmp_path, "0_2", [(b"a", b"1", 1_500), (b"b", b"2", NO_TIMESTAMP)])
    (store_dir,) = find_store_dirs(str(tmp_path), "app", "counts")
    assert store_dir.timestamped
    rows = [row for batch in read_store(store_dir) for row in batch.to_pylist()]
    assert rows == [
        {"task_id": "0_2", "partition": 2, "key": b"a", "value": b"1", "timestamp": at_ms(1_500)},
        {"task_id": "0_2", "partition": 2, "key": b"b", "value": b"2", "timestamp": None},
    ]


def test_unmarked_task_reads_with_null_timestamps_beside_a_marked_one(tmp_path: Path) -> None:
    write_store(tmp_path, "0_0", {b"a": b"1"})  # not yet upgraded: plain values
    write_timestamped_store(tmp_path, "0_1", [(b"b", b"2", 7)])
    dirs = find_store_dirs(str(tmp_path), "app", "counts")
    assert [d.timestamped for d in dirs] == [False, True]
    rows = [r for d in dirs for b in read_store(d, timestamp_column=True) for r in b.to_pylist()]
    assert [(r["key"], r["value"], r["timestamp"]) for r in rows] == [
        (b"a", b"1", None),
        (b"b", b"2", at_ms(7)),
    ]


def test_marked_store_with_a_short_value_names_its_path(tmp_path: Path) -> None:
    write_store(tmp_path, "0_0", {b"a": b"1234567"})
    (tmp_path / "app" / "0_0" / "counts.timestamped").touch()
    (store_dir,) = find_store_dirs(str(tmp_path), "app", "counts")
    with pytest.raises(StateStoreError, match=r"0_0/counts is marked timestamped .* 7 bytes"):
        list(read_store(store_dir))


def at_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
