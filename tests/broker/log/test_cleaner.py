"""Log compaction: latest value per key, tombstones, lag, offsets and batch fields preserved."""

from __future__ import annotations

from aiokafka.record.default_records import DefaultRecordBatch

from streamrt.broker.log.batch import iter_headers
from streamrt.broker.log.cleaner import clean_log
from tests.broker.log.conftest import make_batch, read_all

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "300", "min.cleanable.dirty.ratio": "0.01"}


def _write(log, items, ts=1_000):
    """items: (key, value) pairs, one batch each; returns {key: last offset written}."""
    last = {}
    for key, value in items:
        last[key] = log.append(make_batch([(key, value, ts)]), 0).base_offset
    return last


def _latest(records):
    out = {}
    for offset, key, value, _ts in records:
        out[key] = (offset, value)
    return out


def test_compaction_keeps_latest_value_per_key_at_its_original_offset(log_factory):
    log = log_factory(COMPACT)
    items = [(b"k%d" % (i % 4), b"v%d" % i) for i in range(40)]
    _write(log, items)
    before = read_all(log)
    size_before = log.size_bytes()
    stats = clean_log(log, 10_000)
    assert stats is not None and stats.records_removed > 0
    after = read_all(log)
    assert _latest(after) == _latest(before)
    assert log.size_bytes() < size_before
    active_base = log.segments[-1].base_offset
    cleaned_keys = [key for offset, key, _v, _t in after if offset < active_base]
    assert len(cleaned_keys) == len(set(cleaned_keys))
    assert [r[0] for r in after] == sorted(r[0] for r in after)
    assert log.log_start_offset == 0 and log.log_end_offset == 40


def test_tombstones_survive_until_delete_retention_then_vanish(log_factory):
    log = log_factory({**COMPACT, "delete.retention.ms": "5000"})
    log.append(make_batch([(b"gone", b"v1", 1_000)]), 0)
    log.append(make_batch([(b"stay", b"v1", 1_000)]), 0)
    log.append(make_batch([(b"gone", None, 2_000)]), 0)
    for i in range(6):
        log.append(make_batch([(b"filler%d" % i, b"x" * 40, 2_000)]), 0)
    clean_log(log, 3_000)
    rows = {key: value for _o, key, value, _t in read_all(log)}
    assert rows[b"gone"] is None and rows[b"stay"] == b"v1"
    # Nothing new is dirty, but the kept tombstone's deadline triggers another pass.
    assert clean_log(log, 6_000) is None
    assert clean_log(log, 7_000) is not None
    keys = [key for _o, key, _v, _t in read_all(log)]
    assert b"gone" not in keys and b"stay" in keys


def test_min_compaction_lag_protects_recent_segments(log_factory):
    log = log_factory({**COMPACT, "min.compaction.lag.ms": "10000"})
    log.append(make_batch([(b"k", b"old", 1_000)]), 0)
    for i in range(5):
        log.append(make_batch([(b"k", b"new%d" % i, 50_000)]), 0)
    clean_log(log, 55_000)
    assert [v for _o, _k, v, _t in read_all(log)][:1] == [b"old"]
    clean_log(log, 70_000)
    values = [v for _o, _k, v, _t in read_all(log)]
    assert b"old" not in values and values[-1] == b"new4"


def test_thinned_batch_keeps_codec_offsets_and_producer_fields(log_factory):
    log = log_factory(COMPACT)
    log.append(
        make_batch(
            [(b"a", b"1", 10), (b"b", b"2", 11), (b"c", b"3", 12)],
            producer_id=9,
            producer_epoch=2,
            base_sequence=0,
            codec=1,
        ),
        0,
    )
    log.append(
        make_batch([(b"b", b"new", 20)] + [(b"pad%d" % i, b"x" * 60, 20) for i in range(2)]), 0
    )
    log.append(make_batch([(b"z", b"z", 30)]), 0)
    clean_log(log, 100)
    raw = log.read(0, 1 << 20).records
    h = next(iter_headers(raw))
    batch = DefaultRecordBatch(raw[: h.size])
    assert batch.validate_crc()
    assert (
        h.base_offset,
        h.last_offset_delta,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
    ) == (
        0,
        2,
        9,
        2,
        0,
    )
    assert batch.compression_type == 1
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in batch] == [
        (0, b"a", b"1", 10, [("h", b"x")]),
        (2, b"c", b"3", 12, [("h", b"x")]),
    ]
    # producer state is unchanged by the rewrite: the next sequence is still 3
    nxt = make_batch([(b"q", b"q", 40)], producer_id=9, producer_epoch=2, base_sequence=3)
    assert not log.append(nxt, 0).duplicate


def test_compaction_result_survives_restart(manager_factory):
    m = manager_factory()
    m.create_topic("c", 1, COMPACT)
    log = m.log("c", 0)
    _write(log, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    m.run_maintenance(10_000)
    expected = read_all(log)
    m.close()
    log2 = manager_factory().log("c", 0)
    assert read_all(log2) == expected
    assert log2.log_end_offset == 30


def test_dirty_ratio_below_threshold_skips_cleaning(log_factory):
    log = log_factory({**COMPACT, "min.cleanable.dirty.ratio": "0.9"})
    _write(log, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    assert clean_log(log, 10_000) is not None
    _write(log, [(b"k0", b"again")])
    _write(log, [(b"k%d" % i, b"x" * 50) for i in range(6)])
    assert clean_log(log, 10_000) is None


def test_thinned_log_append_time_batch_keeps_type_and_timestamps(log_factory):
    log = log_factory({**COMPACT, "message.timestamp.type": "LogAppendTime"})
    log.append(make_batch([(b"a", b"1", 1), (b"b", b"2", 2)]), 5_000)
    log.append(
        make_batch([(b"b", b"new", 3)] + [(b"p%d" % i, b"x" * 80, 3) for i in range(2)]), 6_000
    )
    log.append(make_batch([(b"z", b"z", 4)]), 7_000)
    clean_log(log, 10_000)
    raw = log.read(0, 1 << 20).records
    batch = DefaultRecordBatch(raw[: next(iter_headers(raw)).size])
    assert batch.validate_crc() and batch.timestamp_type == 1
    assert [(r.offset, r.key, r.timestamp) for r in batch] == [(0, b"a", 5_000)]
