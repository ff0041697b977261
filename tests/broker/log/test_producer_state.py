"""Idempotent producer rules: duplicates, sequence gaps, epochs, wrap-around, restarts."""

from __future__ import annotations

import pytest

from streamrt.broker.log.batch import increment_sequence
from streamrt.broker.log.partition_log import PRODUCER_SNAPSHOT
from streamrt.errors import ErrorCode, KafkaError
from tests.broker.log.conftest import make_batch


def idem(seq: int, n: int = 1, *, pid: int = 7, epoch: int = 0) -> bytes:
    return make_batch(
        [(b"k", b"v%d" % (seq + i), 1_000) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def test_retried_batch_is_answered_with_original_offsets_and_not_written(log_factory):
    log = log_factory()
    first = log.append(idem(0, 2), 0)
    log.append(idem(2), 0)
    size = log.size_bytes()
    dup = log.append(idem(0, 2), 0)
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (
        first.base_offset,
        first.last_offset,
    )
    assert log.size_bytes() == size and log.log_end_offset == 3


def test_only_the_last_five_batches_are_remembered(log_factory):
    log = log_factory()
    for seq in range(6):
        log.append(idem(seq), 0)
    assert log.append(idem(1), 0).duplicate
    with pytest.raises(KafkaError) as err:
        log.append(idem(0), 0)
    assert err.value.code == ErrorCode.out_of_order_sequence_number


def test_sequence_gap_is_out_of_order(log_factory):
    log = log_factory()
    log.append(idem(0), 0)
    with pytest.raises(KafkaError) as err:
        log.append(idem(2), 0)
    assert err.value.code == ErrorCode.out_of_order_sequence_number
    assert log.log_end_offset == 1


def test_older_epoch_is_fenced_and_new_epoch_starts_at_zero(log_factory):
    log = log_factory()
    log.append(idem(0, epoch=1), 0)
    with pytest.raises(KafkaError) as err:
        log.append(idem(1, epoch=0), 0)
    assert err.value.code == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaError) as err:
        log.append(idem(5, epoch=2), 0)
    assert err.value.code == ErrorCode.out_of_order_sequence_number
    assert log.append(idem(0, epoch=2), 0).base_offset == 1


def test_sequences_wrap_at_two_to_the_31():
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(2**31 - 2, 3) == 1
    assert increment_sequence(5, 3) == 8


def test_batch_spanning_the_wrap_is_followed_by_the_wrapped_sequence(log_factory):
    log = log_factory()
    log.append(idem(2**31 - 2, 3), 0)  # sequences 2^31-2, 2^31-1, 0
    assert log.append(idem(1), 0).base_offset == 3


def test_unknown_producer_may_start_at_any_sequence_and_producers_are_independent(log_factory):
    log = log_factory()
    log.append(idem(40, pid=1), 0)
    log.append(idem(0, pid=2), 0)
    assert log.append(idem(41, pid=1), 0).base_offset == 2


@pytest.mark.parametrize("keep_snapshot", [True, False])
def test_state_survives_restart(manager_factory, keep_snapshot):
    m = manager_factory({"log.segment.bytes": "200"})
    m.create_topic("t", 1)
    for seq in range(4):
        m.log("t", 0).append(idem(seq), 0)
    directory = m.log("t", 0).directory
    m.close()
    if not keep_snapshot:
        (directory / PRODUCER_SNAPSHOT).unlink()
    log = manager_factory({"log.segment.bytes": "200"}).log("t", 0)
    assert log.append(idem(3), 0).duplicate
    with pytest.raises(KafkaError):
        log.append(idem(5), 0)
    assert log.append(idem(4), 0).base_offset == 4
