"""Crash recovery at open: torn tails, bad indices, interrupted compaction swaps."""

from __future__ import annotations

import os

from streamrt.broker.log.segment import segment_paths
from streamrt.broker.log.swap import SWAP_PLAN
from tests.broker.log.conftest import read_all, value_batch


def _fill(manager_factory, n, configs=None):
    m = manager_factory()
    m.create_topic("t", 1, configs)
    log = m.log("t", 0)
    for i in range(n):
        log.append(value_batch(i), 0)
    directory = log.directory
    m.close()
    return directory


def test_garbage_after_last_batch_is_truncated(manager_factory):
    directory = _fill(manager_factory, 3)
    log_path = segment_paths(directory, 0)[0]
    good_size = log_path.stat().st_size
    with open(log_path, "ab") as f:
        f.write(b"\x00\x01garbage" * 20)
    log = manager_factory().log("t", 0)
    assert log_path.stat().st_size == good_size
    assert [r[0] for r in read_all(log)] == [0, 1, 2]
    assert log.append(value_batch(3), 0).base_offset == 3


def test_cut_last_batch_is_truncated_and_acknowledged_data_served(manager_factory):
    directory = _fill(manager_factory, 3)
    log_path = segment_paths(directory, 0)[0]
    size = log_path.stat().st_size
    os.truncate(log_path, size - 5)
    log = manager_factory().log("t", 0)
    assert [r[0] for r in read_all(log)] == [0, 1]
    assert log.log_end_offset == 2


def test_corrupt_byte_in_last_batch_is_truncated(manager_factory):
    directory = _fill(manager_factory, 3)
    log_path = segment_paths(directory, 0)[0]
    data = bytearray(log_path.read_bytes())
    data[-2] ^= 0xFF
    log_path.write_bytes(bytes(data))
    log = manager_factory().log("t", 0)
    assert [r[2][:2] for r in read_all(log)] == [b"0-", b"1-"]


def test_missing_and_garbled_indices_are_rebuilt(manager_factory):
    directory = _fill(manager_factory, 40, {"segment.bytes": "300", "index.interval.bytes": "1"})
    bases = sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))
    assert len(bases) > 3
    segment_paths(directory, bases[0])[1].unlink()
    segment_paths(directory, bases[1])[1].write_bytes(b"\x00\x00\x00\x05\x00\x00\x10\x00")
    segment_paths(directory, bases[2])[2].write_bytes(b"torn")
    log = manager_factory().log("t", 0)
    assert [r[0] for r in read_all(log)] == list(range(40))
    for offset in range(40):
        assert read_all(log, offset)[0][0] == offset
    assert len(log.segments[1].index) > 0


def test_interrupted_swap_before_commit_keeps_old_segments(manager_factory):
    directory = _fill(manager_factory, 5)
    for path in segment_paths(directory, 0, ".cleaned"):
        path.write_bytes(b"half written")
    log = manager_factory().log("t", 0)
    assert [r[0] for r in read_all(log)] == [0, 1, 2, 3, 4]
    assert not list(directory.glob("*.cleaned"))


def test_interrupted_swap_after_commit_is_rolled_forward(manager_factory):
    directory = _fill(manager_factory, 6, {"segment.bytes": "300"})
    bases = sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))
    # Simulate a cleaner that merged the first two segments and crashed mid step 4: the merged
    # segment (a plain concatenation here) is committed as .swap and one old segment is gone.
    first, second = bases[0], bases[1]
    merged = (
        segment_paths(directory, first)[0].read_bytes()
        + segment_paths(directory, second)[0].read_bytes()
    )
    log_swap = segment_paths(directory, first, ".swap")[0]
    log_swap.write_bytes(merged)
    (directory / SWAP_PLAN).write_text(f'{{"new_base": {first}, "old_bases": [{first}, {second}]}}')
    for path in segment_paths(directory, second):
        path.unlink()
    log = manager_factory().log("t", 0)
    assert [s.base_offset for s in log.segments][:1] == [first]
    assert second not in [s.base_offset for s in log.segments]
    assert [r[0] for r in read_all(log)] == list(range(6))
    assert not (directory / SWAP_PLAN).exists() and not list(directory.glob("*.swap"))


def test_empty_index_file_of_non_empty_segment_is_rebuilt(manager_factory):
    directory = _fill(manager_factory, 12, {"segment.bytes": "300", "index.interval.bytes": "1"})
    first_index = segment_paths(directory, 0)[1]
    first_index.write_bytes(b"")
    log = manager_factory().log("t", 0)
    assert len(log.segments[0].index) > 1
    assert [r[0] for r in read_all(log, 1)][:1] == [1]
