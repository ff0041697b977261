"""Transactions in the partition log: LSO, markers, aborted index, reopen, compaction, retention."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from streamrt.broker.log import PartitionLog
from streamrt.broker.log.batch import iter_headers
from streamrt.broker.log.cleaner import clean_log
from streamrt.broker.log.control import parse_marker
from streamrt.errors import ErrorCode, KafkaError
from tests.broker.log.conftest import decode, make_batch, read_all

A, B = 100, 200


def txn_batch(
    pid: int, seq: int, values: Sequence[bytes], *, epoch: int = 0, key: bytes | None = b"k"
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 1, pid, epoch, seq, 1 << 30)
    for i, v in enumerate(values):
        builder.append(i, timestamp=1_000, key=key, value=v, headers=[])
    return bytes(builder.build())


def committed_values(log: PartitionLog) -> list[bytes]:
    """What a read_committed consumer delivers (the Java/aiokafka fetcher algorithm): below the
    LSO, minus aborted transactional batches and control batches."""
    seen: set[tuple[int, int]] = set()
    pending: list[tuple[int, int]] = []
    aborting: set[int] = set()
    out = []
    offset = log.log_start_offset
    while True:
        sl = log.read(offset, 1 << 20, read_committed=True)
        if not sl.records:
            return out
        fresh = [e for e in sl.aborted_transactions or () if e not in seen]
        seen.update(fresh)
        pending = sorted(pending + fresh, key=lambda e: e[1])
        for h in iter_headers(sl.records):
            while pending and pending[0][1] <= h.base_offset:
                aborting.add(pending.pop(0)[0])
            batch = sl.records[h.position : h.position + h.size]
            offset = h.next_offset
            if h.is_control:
                marker = parse_marker(batch)
                if marker is not None and not marker.commit:
                    aborting.discard(h.producer_id)
                continue
            if h.is_transactional and h.producer_id in aborting:
                continue
            out += [v for _, _, v, _ in decode(batch) if v is not None]


def control_offsets(log: PartitionLog) -> set[int]:
    offsets: set[int] = set()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20).records
        if not chunk:
            break
        headers = list(iter_headers(chunk))
        offsets |= {h.base_offset for h in headers if h.is_control}
        offset = headers[-1].next_offset
    return offsets


def test_open_transaction_holds_the_lso_and_read_committed(log_factory) -> None:
    log = log_factory()
    log.append(make_batch([(None, b"before", 1_000)]), 0)
    first = log.append(txn_batch(A, 0, [b"a1", b"a2"]), 0).base_offset
    log.append(make_batch([(None, b"after", 1_000)]), 0)
    assert log.last_stable_offset == first
    sl = log.read(0, 1 << 20, read_committed=True)
    assert [v for _, _, v, _ in decode(sl.records)] == [b"before"]
    assert (sl.high_watermark, sl.last_stable_offset, sl.aborted_transactions) == (4, 1, ())
    assert log.read(0, 1 << 20).aborted_transactions is None  # read_uncommitted: null
    assert len(decode(log.read(0, 1 << 20).records)) == 4
    marker = log.append_marker(A, 0, True, 0, 2_000)
    assert marker == 4 and log.last_stable_offset == 5
    assert committed_values(log) == [b"before", b"a1", b"a2", b"after"]


def test_abort_is_indexed_and_hidden(log_factory) -> None:
    log = log_factory()
    first = log.append(txn_batch(A, 0, [b"x"]), 0).base_offset
    offset = log.append_marker(A, 0, False, 0, 2_000)
    sl = log.read(0, 1 << 20, read_committed=True)
    assert sl.aborted_transactions == ((A, first),)
    control = [h for h in iter_headers(sl.records) if h.is_control]
    assert len(control) == 1 and control[0].base_offset == offset
    assert control[0].attributes & 0x30 == 0x30
    raw = sl.records[control[0].position : control[0].position + control[0].size]
    marker = parse_marker(raw)
    assert marker is not None and not marker.commit and marker.coordinator_epoch == 0
    assert committed_values(log) == []
    log.append(txn_batch(A, 1, [b"y"]), 0)
    log.append_marker(A, 0, True, 0, 2_000)
    assert committed_values(log) == [b"y"]


def test_interleaved_transactions_lso_follows_the_earliest(log_factory) -> None:
    log = log_factory()
    log.append(txn_batch(A, 0, [b"a"]), 0)  # offset 0
    log.append(txn_batch(B, 0, [b"b"]), 0)  # offset 1
    assert log.last_stable_offset == 0
    log.append_marker(A, 0, False, 0, 2_000)  # offset 2
    assert log.last_stable_offset == 1
    (entry,) = log.aborted_transactions()
    assert (entry.producer_id, entry.first_offset, entry.last_offset, entry.last_stable_offset) == (
        A,
        0,
        2,
        1,
    )
    log.append_marker(B, 0, True, 0, 2_000)
    assert log.last_stable_offset == log.log_end_offset
    assert committed_values(log) == [b"b"]


def test_producer_rules_inside_transactions(log_factory) -> None:
    log = log_factory()
    log.append(txn_batch(A, 0, [b"a"]), 0)
    with pytest.raises(KafkaError) as plain:
        log.append(
            make_batch([(b"k", b"v", 1_000)], producer_id=A, producer_epoch=0, base_sequence=1), 0
        )
    assert plain.value.code is ErrorCode.invalid_txn_state
    # A fence: the coordinator aborts with epoch 1; the zombie at epoch 0 is refused.
    log.append_marker(A, 1, False, 0, 2_000)
    with pytest.raises(KafkaError) as zombie:
        log.append(txn_batch(A, 1, [b"z"]), 0)
    assert zombie.value.code is ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaError) as old_marker:
        log.append_marker(A, 0, True, 0, 2_000)
    assert old_marker.value.code is ErrorCode.invalid_producer_epoch
    log.append(txn_batch(A, 0, [b"new"], epoch=2), 0)  # the successor starts at sequence 0
    # A re-sent marker with no open transaction is harmless.
    log.append_marker(A, 2, True, 0, 2_000)
    log.append_marker(A, 2, True, 0, 2_000)
    assert committed_values(log) == [b"new"]


@pytest.mark.parametrize("lose_snapshot", [False, True])
def test_lso_and_aborted_index_survive_reopen(manager_factory, tmp_path, lose_snapshot) -> None:
    m = manager_factory()
    m.create_topic("t", 1, {"segment.bytes": "200"})
    log = m.log("t", 0)
    for i in range(6):
        log.append(txn_batch(A, i, [b"a%d" % i]), 0)
        log.append_marker(A, 0, i % 2 == 0, 0, 2_000)
    log.append(txn_batch(B, 0, [b"open"]), 0)
    before = (log.last_stable_offset, log.aborted_transactions(), committed_values(log))
    assert len(log.segments) > 2
    m.close()
    if lose_snapshot:  # as after a crash before any snapshot: rebuilt from the markers
        for name in ("producer-state.json", "aborted-txns.json"):
            (tmp_path / "data" / "t-0" / name).unlink()
    reopened = manager_factory().log("t", 0)
    after = (
        reopened.last_stable_offset,
        reopened.aborted_transactions(),
        committed_values(reopened),
    )
    assert after == before
    assert len(before[1]) == 3


def test_compaction_removes_aborted_data_and_stops_at_the_lso(log_factory) -> None:
    log = log_factory(
        {"cleanup.policy": "compact", "segment.bytes": "300", "min.cleanable.dirty.ratio": "0.01"}
    )
    log.append(make_batch([(b"k", b"committed", 1_000)]), 0)
    log.append(txn_batch(A, 0, [b"aborted"], key=b"k"), 0)
    log.append_marker(A, 0, False, 0, 2_000)
    log.append(txn_batch(A, 1, [b"other-key"], key=b"z"), 0)
    log.append_marker(A, 0, True, 0, 2_000)
    log.append(txn_batch(B, 0, [b"open"], key=b"k"), 0)  # open: not cleanable
    for i in range(8):
        log.append(make_batch([(b"f%d" % i, b"filler", 1_000)]), 0)
    before = committed_values(log)
    lso = log.last_stable_offset
    clean_log(log, 10_000_000)
    everything = read_all(log)
    values = [v for _, _, v, _ in everything]
    assert b"aborted" not in values  # removed although it was the latest value of "k"
    assert b"committed" in values and b"open" in values
    assert committed_values(log) == before
    assert log.last_stable_offset == lso
    assert control_offsets(log), "markers are kept"


def test_retention_drops_index_entries_of_deleted_segments(manager_factory) -> None:
    m = manager_factory()
    m.create_topic("t", 1, {"segment.bytes": "200", "retention.ms": "1000"})
    log = m.log("t", 0)
    for i in range(4):
        log.append(txn_batch(A, i, [b"a%d" % i]), 0)
        log.append_marker(A, 0, False, 0, 2_000)
    assert len(log.aborted_transactions()) == 4
    log.apply_retention(10_000_000)
    start = log.log_start_offset
    assert start > 0
    assert all(e.last_offset >= start for e in log.aborted_transactions())
    assert len(log.aborted_transactions()) < 4


def test_markers_go_once_their_data_is_gone_and_the_horizon_passed(manager_factory) -> None:
    m = manager_factory()
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": "300",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "1000",
    }
    m.create_topic("t", 1, config)
    log = m.log("t", 0)
    log.append(txn_batch(A, 0, [b"aborted"], key=b"x"), 0)
    abort_marker = log.append_marker(A, 0, False, 0, 2_000)
    log.append(txn_batch(A, 1, [b"superseded"], key=b"k"), 0)
    superseded_marker = log.append_marker(A, 0, True, 0, 2_000)
    log.append(txn_batch(B, 0, [b"kept"], key=b"y"), 0)
    kept_marker = log.append_marker(B, 0, True, 0, 2_000)
    log.append(make_batch([(b"k", b"newer", 2_000)]), 0)
    for i in range(8):
        log.append(make_batch([(b"f%d" % i, b"filler", 2_000)]), 0)
    before = committed_values(log)
    clean_log(log, 1_500)  # inside the horizon: markers stay
    assert {abort_marker, superseded_marker, kept_marker} <= control_offsets(log)
    clean_log(log, 10_000_000)
    controls = control_offsets(log)
    assert controls == {kept_marker}
    after = committed_values(log)
    assert b"aborted" not in before and b"superseded" in before
    assert b"superseded" not in after and {b"kept", b"newer"} <= set(after)
    m.close()
    reopened = manager_factory().log("t", 0)
    assert reopened.last_stable_offset == reopened.log_end_offset
    assert committed_values(reopened) == after
