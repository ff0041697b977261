"""Retention by time and size deletes old segments, never the active one."""

from __future__ import annotations

import pytest

from streamrt.errors import ErrorCode, KafkaError
from tests.broker.log.conftest import read_all, value_batch


def test_retention_by_time_deletes_expired_segments_but_not_the_active_one(log_factory):
    log = log_factory({"segment.bytes": "100", "retention.ms": "10000"})
    for i in range(6):
        log.append(value_batch(i, ts=1_000 * i), 0)
    assert len(log.segments) == 6
    assert log.apply_retention(12_500) == 3  # segments with max ts 0, 1000, 2000
    assert log.log_start_offset == 3
    assert [r[0] for r in read_all(log)] == [3, 4, 5]
    assert log.apply_retention(10**9) == 2
    assert len(log.segments) == 1 and log.log_start_offset == 5
    assert [r[0] for r in read_all(log)] == [5]


def test_retention_by_size_keeps_total_under_the_limit(log_factory):
    # Kafka's rule: delete the oldest segment only while the rest stays >= retention.bytes.
    log = log_factory({"segment.bytes": "100", "retention.bytes": "300"})
    for i in range(6):
        log.append(value_batch(i), 0)
    seg_size = log.segments[0].size
    assert len(log.segments) == 6 and 6 * seg_size > 300
    deleted = log.apply_retention(0)
    assert deleted > 0
    assert log.size_bytes() >= 300 > log.size_bytes() - seg_size
    assert [r[0] for r in read_all(log)] == list(range(deleted, 6))


def test_compact_only_policy_never_deletes_by_retention(log_factory):
    log = log_factory({"segment.bytes": "100", "retention.ms": "1", "cleanup.policy": "compact"})
    for i in range(3):
        log.append(value_batch(i, key=b"k%d" % i), 0)
    assert log.apply_retention(10**9) == 0


def test_reading_below_log_start_is_out_of_range(log_factory):
    log = log_factory({"segment.bytes": "100", "retention.ms": "0"})
    for i in range(3):
        log.append(value_batch(i, ts=0), 0)
    log.apply_retention(10)
    with pytest.raises(KafkaError) as err:
        log.read(0, 100)
    assert err.value.code == ErrorCode.offset_out_of_range
