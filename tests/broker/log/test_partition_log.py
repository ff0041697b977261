"""Append/read, offsets, rolls, index lookups, validation errors and timestamps of one log."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch

from streamrt.broker.log.batch import iter_headers
from streamrt.errors import ErrorCode, KafkaError
from tests.broker.log.conftest import decode, make_batch, read_all, value_batch


def test_append_read_round_trip_assigns_consecutive_offsets(log_factory):
    log = log_factory()
    first = log.append(make_batch([(b"a", b"1", 10), (b"b", b"2", 11)]), 50)
    second = log.append(make_batch([(None, b"3", 12)]), 51)
    assert (first.base_offset, first.last_offset, first.log_append_time_ms) == (0, 1, -1)
    assert (second.base_offset, second.last_offset) == (2, 2)
    assert log.log_end_offset == 3
    got = log.read(0, 1 << 20)
    assert got.high_watermark == 3 and got.log_start_offset == 0
    assert decode(got.records) == [(0, b"a", b"1", 10), (1, b"b", b"2", 11), (2, None, b"3", 12)]


def test_read_at_log_end_is_empty_and_beyond_is_out_of_range(log_factory):
    log = log_factory()
    log.append(value_batch(0), 0)
    assert log.read(1, 100).records == b""
    with pytest.raises(KafkaError) as err:
        log.read(2, 100)
    assert err.value.code == ErrorCode.offset_out_of_range
    with pytest.raises(KafkaError):
        log.read(-1, 100)


def test_read_returns_whole_batches_within_max_bytes_but_at_least_one(log_factory):
    log = log_factory()
    for i in range(5):
        log.append(value_batch(i, size=100), 0)
    one = next(iter_headers(log.read(0, 1 << 20).records)).size
    assert len(list(iter_headers(log.read(0, one * 2 + 10).records))) == 2
    assert len(list(iter_headers(log.read(0, 5).records))) == 1
    assert log.read(0, 5, min_one=False).records == b""


def test_offsets_continue_after_close_and_reopen(manager_factory):
    m = manager_factory()
    m.create_topic("t", 1)
    for i in range(3):
        m.log("t", 0).append(value_batch(i), 0)
    m.close()
    m2 = manager_factory()
    log = m2.log("t", 0)
    assert log.log_end_offset == 3
    assert log.append(value_batch(3), 0).base_offset == 3
    assert [r[0] for r in read_all(log)] == [0, 1, 2, 3]


def test_roll_by_size_and_lookup_every_offset_across_segments(log_factory):
    log = log_factory({"segment.bytes": "500", "index.interval.bytes": "100"})
    for i in range(60):
        log.append(make_batch([(None, b"v%d" % i, 1000 + i), (None, b"w%d" % i, 1000 + i)]), 0)
    assert len(log.segments) > 5
    assert all(s.size <= 500 for s in log.segments)
    for offset in range(120):
        records = decode(log.read(offset, 1).records)
        assert records[0][0] <= offset <= records[-1][0]
        assert records[offset - records[0][0]][2] == (b"v%d" if offset % 2 == 0 else b"w%d") % (
            offset // 2
        )


def test_roll_by_time(log_factory):
    log = log_factory({"segment.ms": "1000"})
    log.append(value_batch(0, ts=5_000), 5_000)
    log.append(value_batch(1, ts=5_500), 5_500)
    assert len(log.segments) == 1
    log.append(value_batch(2, ts=6_000), 6_000)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.roll_if_due(6_500)
    assert len(log.segments) == 2
    log.roll_if_due(7_000)
    assert [s.base_offset for s in log.segments] == [0, 2, 3]


def test_crc_corruption_is_rejected_and_nothing_written(log_factory):
    log = log_factory()
    good = value_batch(0)
    bad = bytearray(value_batch(1))
    bad[-1] ^= 0xFF
    with pytest.raises(KafkaError) as err:
        log.append(good + bytes(bad), 0)
    assert err.value.code == ErrorCode.corrupt_message
    assert log.log_end_offset == 0 and log.size_bytes() == 0


def test_truncated_batch_and_wrong_magic_are_rejected(log_factory):
    log = log_factory()
    with pytest.raises(KafkaError) as err:
        log.append(value_batch(0)[:-3], 0)
    assert err.value.code == ErrorCode.corrupt_message
    old = bytearray(value_batch(0))
    old[16] = 1
    with pytest.raises(KafkaError) as err:
        log.append(bytes(old), 0)
    assert err.value.code == ErrorCode.unsupported_for_message_format


def test_batch_larger_than_max_message_bytes_is_rejected(log_factory):
    log = log_factory({"max.message.bytes": "200"})
    log.append(value_batch(0, size=50), 0)
    with pytest.raises(KafkaError) as err:
        log.append(value_batch(1, size=300), 0)
    assert err.value.code == ErrorCode.message_too_large
    assert log.log_end_offset == 1


def test_compacted_topic_rejects_records_without_key(log_factory):
    log = log_factory({"cleanup.policy": "compact"})
    with pytest.raises(KafkaError) as err:
        log.append(make_batch([(b"k", b"v", 1), (None, b"v", 1)]), 0)
    assert err.value.code == ErrorCode.invalid_record
    assert log.append(make_batch([(b"k", b"v", 1)]), 0).base_offset == 0


def test_log_append_time_sets_timestamp_type_and_keeps_crc_valid(log_factory):
    log = log_factory({"message.timestamp.type": "LogAppendTime"})
    info = log.append(make_batch([(b"k", b"v", 1), (b"k2", b"v", 2)]), 777_000)
    assert info.log_append_time_ms == 777_000
    raw = log.read(0, 1 << 20).records
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc() and batch.timestamp_type == 1
    assert [r.timestamp for r in batch] == [777_000, 777_000]


def test_offset_for_timestamp_finds_first_record_at_or_after(log_factory):
    log = log_factory({"segment.bytes": "400", "index.interval.bytes": "1"})
    for i in range(30):
        log.append(make_batch([(None, b"a", 100 * i), (None, b"b", 100 * i + 50)]), 0)
    assert log.offset_for_timestamp(0) == (0, 0)
    assert log.offset_for_timestamp(1_250) == (25, 1_250)
    assert log.offset_for_timestamp(1_260) == (26, 1_300)
    assert log.offset_for_timestamp(2_950) == (59, 2_950)
    assert log.offset_for_timestamp(2_951) is None


def test_fsync_always_policy_appends_and_flushes(log_factory):
    log = log_factory(overrides={"streamrt.log.fsync": "always"})
    log.append(value_batch(0), 0)
    assert not log.dirty
    assert [r[0] for r in read_all(log)] == [0]


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_stored_opaque_and_keys_checked(log_factory, codec):
    log = log_factory({"cleanup.policy": "compact"})
    sent = make_batch([(b"k%d" % i, b"v" * 50, i) for i in range(20)], codec=codec)
    log.append(sent, 0)
    stored = log.read(0, 1 << 20).records
    assert stored[16:] == sent[16:]  # only baseOffset and partitionLeaderEpoch are rewritten
    assert [r[1] for r in decode(stored)] == [b"k%d" % i for i in range(20)]
    with pytest.raises(KafkaError) as err:
        log.append(make_batch([(None, b"v", 0)], codec=codec), 0)
    assert err.value.code == ErrorCode.invalid_record
