"""The batch validator at the log: lying batches, bad deltas, timestamps, bombs; nothing of a
refused request is appended."""

from __future__ import annotations

import struct
import time

import pytest

from streamrt.broker.log.batch import recompute_crc
from streamrt.broker.log.inflate import inflate
from streamrt.broker.log.validator import UNCOMPRESSED_FLOOR
from streamrt.errors import ErrorCode, KafkaError
from tests.broker.batches import batch, bomb, lie_count, with_records_section
from tests.broker.log.conftest import read_all


def _now() -> int:
    return int(time.time() * 1000)


CODECS = pytest.mark.parametrize(
    "codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"]
)


def _refused(log, records: bytes, code: ErrorCode, now_ms: int | None = None) -> None:
    end, size = log.log_end_offset, log.size_bytes()
    with pytest.raises(KafkaError) as err:
        log.append(bytes(records), _now() if now_ms is None else now_ms)
    assert err.value.code == code, err.value
    assert (log.log_end_offset, log.size_bytes()) == (end, size)


@CODECS
def test_count_claiming_more_records_than_present_is_refused(log_factory, codec):
    log = log_factory()
    _refused(log, lie_count(batch([b"a"], codec=codec), 2**31 - 1), ErrorCode.invalid_record)
    _refused(log, lie_count(batch([b"a", b"b"], codec=codec), 3), ErrorCode.invalid_record)
    assert log.append(bytes(batch([b"a"], codec=codec)), _now()).last_offset == 0


@CODECS
def test_count_claiming_fewer_records_than_present_is_refused(log_factory, codec):
    log = log_factory()
    _refused(log, lie_count(batch([b"a", b"b", b"c"], codec=codec), 2), ErrorCode.invalid_record)


def test_count_and_last_offset_delta_must_agree(log_factory):
    log = log_factory()
    _refused(log, lie_count(batch([b"a", b"b"]), 2, 5), ErrorCode.invalid_record)


@CODECS
def test_offset_deltas_must_be_0_to_n_minus_1(log_factory, codec):
    log = log_factory()
    _refused(
        log, batch([b"a", b"b", b"c"], codec=codec, deltas=[0, 2, 1]), ErrorCode.invalid_record
    )
    _refused(log, batch([b"a", b"b"], codec=codec, deltas=[1, 2]), ErrorCode.invalid_record)


def test_one_bad_batch_refuses_the_whole_request(log_factory):
    log = log_factory()
    good = bytes(batch([b"a"]))
    _refused(log, good + bytes(lie_count(batch([b"b"]), 9)), ErrorCode.invalid_record)


def test_record_timestamps_are_checked_one_by_one(log_factory):
    log = log_factory({"message.timestamp.after.max.ms": "1000"})
    ok = batch([b"a"], timestamp=1_500)
    late = batch([b"a"], timestamp=10_000)
    _refused(log, late, ErrorCode.invalid_timestamp, now_ms=1_000)
    assert log.append(bytes(ok), 1_000).base_offset == 0


def test_producer_may_not_claim_log_append_time(log_factory):
    log = log_factory()
    lat = batch([b"a"])
    struct.pack_into(">h", lat, 21, 0x08)
    recompute_crc(lat, 0, len(lat))
    _refused(log, lat, ErrorCode.invalid_timestamp)


def test_lying_max_timestamp_is_corrected_to_the_records(log_factory):
    log = log_factory()
    lying = batch([b"a"], timestamp=1_000)
    struct.pack_into(">q", lying, 35, 2**62)
    recompute_crc(lying, 0, len(lying))
    log.append(bytes(lying), 1_000)
    assert log.segments[-1].max_timestamp == 1_000
    assert [r[3] for r in read_all(log)] == [1_000]


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_compression_bomb_is_refused_and_bounded(log_factory, codec):
    log = log_factory({"max.message.bytes": "4000000"})  # snappy inflates at most ~21x
    _refused(log, bomb(codec, UNCOMPRESSED_FLOOR + 1024), ErrorCode.record_list_too_large)


@pytest.mark.parametrize("codec", [1, 3, 4], ids=["gzip", "lz4", "zstd"])
def test_inflation_stops_at_the_limit(codec):
    """The decompressor's output never passes limit + one chunk, whatever the input holds."""
    data = bytes(bomb(codec, 8 << 20))[61:]
    with pytest.raises(KafkaError) as err:
        inflate(codec, data, 1 << 20)
    assert err.value.code == ErrorCode.record_list_too_large


def test_garbage_records_section_is_corrupt(log_factory):
    log = log_factory()
    junk = bytearray(batch([b"a"], codec=4))
    junk[61:] = b"\x28\xb5\x2f\xfd" + b"\xff" * 40
    struct.pack_into(">i", junk, 8, len(junk) - 12)
    recompute_crc(junk, 0, len(junk))
    _refused(log, junk, ErrorCode.corrupt_message)


def test_topic_codec_rewrite_is_held_to_max_message_bytes(log_factory):
    """The size check runs after recompression too (it did only after, before the validator)."""
    log = log_factory({"compression.type": "uncompressed", "max.message.bytes": "20000"})
    packed = with_records_section(batch([b"v"]), bytes(batch([b"x" * 30_000]))[61:], 4)
    _refused(log, packed, ErrorCode.message_too_large)
