"""Rules of the transaction coordinator, as stories on a manual clock (no sockets, no sleeps)."""

from __future__ import annotations

from pathlib import Path

from streamrt.broker.txn.coordinator import TxnConfig
from streamrt.errors import ErrorCode
from tests.broker.txn.context import TxnTestContext
from tests.source_scan import imports

NONE = ErrorCode.none


def test_init_producer_id_assigns_then_bumps_the_epoch(context: TxnTestContext) -> None:
    first = context.init("tx")
    assert (first.error_code, first.producer_epoch) == (NONE, 0)
    second = context.init("tx")
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert context.state("tx") == "Empty"
    other = context.init("other")
    assert other.producer_id != first.producer_id


def test_bad_init_requests_get_kafka_error_codes(context: TxnTestContext) -> None:
    assert context.init("").error_code == ErrorCode.invalid_request
    assert context.init("tx", timeout_ms=0).error_code == ErrorCode.invalid_transaction_timeout
    assert (
        context.init("tx", timeout_ms=900_001).error_code == ErrorCode.invalid_transaction_timeout
    )
    assert context.init("tx", pid=5).error_code == ErrorCode.invalid_request  # pid without epoch
    assert "tx" not in context.coordinator.transactions


def test_kip360_resume_retry_and_fencing_by_expected_epoch(context: TxnTestContext) -> None:
    r = context.init("tx")
    pid = r.producer_id
    bumped = context.init("tx", pid=pid, epoch=0)
    assert (bumped.error_code, bumped.producer_epoch) == (NONE, 1)
    retried = context.init("tx", pid=pid, epoch=0)  # answer lost, client retries
    assert (retried.error_code, retried.producer_epoch) == (NONE, 1)
    assert context.init("tx", pid=pid + 99, epoch=1).error_code == ErrorCode.producer_fenced
    assert context.init("tx", pid=pid + 99, epoch=1, version=3).error_code == (
        ErrorCode.invalid_producer_epoch
    )


def test_commit_story_prepare_markers_complete(context: TxnTestContext) -> None:
    pid, epoch = context.begin("tx")
    assert context.state("tx") == "Ongoing"
    assert context.add_offsets("tx", pid, epoch, "g") == NONE
    assert context.end("tx", pid, epoch, commit=True) == NONE
    assert context.state("tx") == "PrepareCommit"
    # Until every marker is written the transaction is busy.
    assert context.add_partitions("tx", pid, epoch) == {("t", 0): ErrorCode.concurrent_transactions}
    assert context.end("tx", pid, epoch, commit=True) == ErrorCode.concurrent_transactions
    assert context.end("tx", pid, epoch, commit=False) == ErrorCode.invalid_txn_state
    (markers,) = context.write_markers()
    assert markers.commit and markers.producer_epoch == epoch
    assert set(markers.partitions) == {("t", 0), ("__consumer_offsets", 1)}
    assert context.state("tx") == "CompleteCommit"
    assert context.end("tx", pid, epoch, commit=True) == NONE  # idempotent retry
    assert context.end("tx", pid, epoch, commit=False) == ErrorCode.invalid_txn_state
    # The next transaction reuses the epoch (TV1) and starts with fresh partitions.
    assert context.add_partitions("tx", pid, epoch, {"u": [1]}) == {("u", 1): NONE}
    assert context.coordinator.transactions["tx"].partitions == {("u", 1)}


def test_end_txn_without_a_transaction_is_invalid(context: TxnTestContext) -> None:
    r = context.init("tx")
    assert context.end("tx", r.producer_id, r.producer_epoch, commit=True) == (
        ErrorCode.invalid_txn_state
    )


def test_unknown_id_or_producer_id_gets_invalid_producer_id_mapping(
    context: TxnTestContext,
) -> None:
    assert context.add_partitions("nope", 1, 0) == {("t", 0): ErrorCode.invalid_producer_id_mapping}
    assert context.add_offsets("nope", 1, 0) == ErrorCode.invalid_producer_id_mapping
    assert context.end("nope", 1, 0, commit=True) == ErrorCode.invalid_producer_id_mapping
    pid, epoch = context.begin("tx")
    assert context.end("tx", pid + 1, epoch, commit=True) == ErrorCode.invalid_producer_id_mapping


def test_unknown_topic_fails_only_that_partition_and_adds_nothing(context: TxnTestContext) -> None:
    context.known_partitions = {("t", 0)}
    r = context.init("tx")
    errors = context.add_partitions("tx", r.producer_id, 0, {"t": [0], "missing": [0]})
    assert errors == {
        ("t", 0): ErrorCode.operation_not_attempted,
        ("missing", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert context.state("tx") == "Empty"


def test_a_new_producer_fences_the_zombie_and_aborts_its_transaction(
    context: TxnTestContext,
) -> None:
    pid, epoch = context.begin("tx")
    # Producer B starts with the same transactional id while A's transaction is open.
    fencing = context.init("tx")
    assert fencing.error_code == ErrorCode.concurrent_transactions
    md = context.coordinator.transactions["tx"]
    assert (md.state.wire_name, md.producer_epoch) == ("PrepareAbort", epoch + 1)
    (abort,) = context.write_markers()
    assert not abort.commit and abort.producer_epoch == epoch + 1
    b = context.init("tx")  # B's retry
    assert (b.error_code, b.producer_epoch) == (NONE, epoch + 2)
    # A, the zombie, is fenced everywhere: 90 on versions that know it, 47 before.
    assert context.add_partitions("tx", pid, epoch) == {("t", 0): ErrorCode.producer_fenced}
    assert context.add_partitions("tx", pid, epoch, version=0) == {
        ("t", 0): ErrorCode.invalid_producer_epoch
    }
    assert context.end("tx", pid, epoch, commit=True) == ErrorCode.producer_fenced
    assert context.end("tx", pid, epoch, commit=True, version=1) == ErrorCode.invalid_producer_epoch
    assert context.coordinator.verify_partition("tx", pid, epoch, ("t", 0)) == (
        ErrorCode.invalid_producer_epoch
    )


def test_timeout_scan_aborts_and_fences_the_late_producer(context: TxnTestContext) -> None:
    pid, epoch = context.begin("tx", timeout_ms=5_000)
    context.sleep(4_000)
    assert context.state("tx") == "Ongoing"
    context.sleep(2_000)  # the scan runs every second
    assert context.state("tx") == "PrepareAbort"
    context.write_markers()
    assert context.state("tx") == "CompleteAbort"
    assert context.end("tx", pid, epoch, commit=True) == ErrorCode.producer_fenced
    assert context.add_partitions("tx", pid, epoch, version=0) == {
        ("t", 0): ErrorCode.invalid_producer_epoch
    }


def test_a_failed_state_write_changes_nothing_and_is_retriable(context: TxnTestContext) -> None:
    r = context.init("tx")
    context.fail_next_append = ErrorCode.not_leader_or_follower
    assert context.add_offsets("tx", r.producer_id, 0) == ErrorCode.not_coordinator
    assert context.state("tx") == "Empty"
    assert context.add_offsets("tx", r.producer_id, 0) == NONE
    assert context.state("tx") == "Ongoing"


def test_decided_transaction_is_completed_after_a_restart(context: TxnTestContext) -> None:
    pid, epoch = context.begin("tx")
    assert context.end("tx", pid, epoch, commit=True) == NONE
    context.restart()  # the markers were never written
    assert context.state("tx") == "PrepareCommit"
    (resumed,) = context.write_markers()
    assert resumed.commit and resumed.partitions == (("t", 0),)
    assert context.state("tx") == "CompleteCommit"


def test_open_transaction_survives_a_restart_and_then_times_out(context: TxnTestContext) -> None:
    pid, epoch = context.begin("tx", timeout_ms=10_000)
    context.sleep(3_000)
    context.restart()
    md = context.coordinator.transactions["tx"]
    assert (md.state.wire_name, md.producer_id, md.producer_epoch) == ("Ongoing", pid, epoch)
    context.sleep(8_000)
    assert context.state("tx") == "PrepareAbort"
    assert context.markers[0].partitions == (("t", 0),)


def test_describe_and_list_transactions(context: TxnTestContext) -> None:
    pid, _ = context.begin("a")
    context.init("b")
    (a, missing) = context.describe("a", "zzz").transaction_states
    assert (a.transaction_state, a.producer_id, a.error_code) == ("Ongoing", pid, NONE)
    assert [(t.topic, list(t.partitions)) for t in a.topics] == [("t", [0])]
    assert missing.error_code == ErrorCode.transactional_id_not_found
    listed = context.list(states=("Ongoing", "Bogus"))
    assert [s.transactional_id for s in listed.transaction_states] == ["a"]
    assert list(listed.unknown_state_filters) == ["Bogus"]
    assert {s.transactional_id for s in context.list().transaction_states} == {"a", "b"}
    context.sleep(5_000)
    assert [s.transactional_id for s in context.list(duration=4_000).transaction_states] == ["a"]


def test_idle_transactional_ids_expire() -> None:
    context = TxnTestContext(TxnConfig(id_expiration_ms=60_000, id_scan_interval_ms=10_000))
    context.init("tx")
    context.sleep(75_000)
    assert context.describe("tx").transaction_states[0].error_code == (
        ErrorCode.transactional_id_not_found
    )
    assert context.log[-1].value is None  # a tombstone: gone after a restart too
    context.restart()
    assert "tx" not in context.coordinator.transactions


def test_the_coordinator_core_does_no_io() -> None:
    root = Path(__file__).parents[3] / "streamrt" / "broker" / "txn"
    for name in (
        "coordinator.py",
        "metadata.py",
        "state.py",
        "records.py",
        "result.py",
        "admin.py",
    ):
        imported = {module.split(".")[0] for module, _level in imports(root / name)}
        assert not imported & {"asyncio", "socket", "time"}, name


def test_an_exhausted_epoch_rotates_to_a_new_producer_id(context: TxnTestContext) -> None:
    first = context.init("tx")
    md = context.coordinator.transactions["tx"]
    md.producer_epoch = 32766  # as after 32766 restarts of the producer
    rotated = context.init("tx")
    assert rotated.error_code == NONE
    assert (rotated.producer_id, rotated.producer_epoch) == (first.producer_id + 1, 0)
    assert md.last_producer_id == first.producer_id


def test_produce_and_offsets_verification(context: TxnTestContext) -> None:
    """KIP-890 part 1 in-process: only partitions added to the ongoing transaction."""
    pid, epoch = context.begin("tx")
    verify = context.coordinator.verify_partition
    assert verify("tx", pid, epoch, ("t", 0)) == NONE
    assert verify("tx", pid, epoch, ("t", 1)) == ErrorCode.invalid_txn_state
    offsets = ("__consumer_offsets", len("g") % 4)
    assert verify("tx", pid, epoch, offsets) == ErrorCode.invalid_txn_state  # no AddOffsets yet
    assert context.add_offsets("tx", pid, epoch, "g") == NONE
    assert verify("tx", pid, epoch, offsets) == NONE
    assert verify("tx", pid + 1, epoch, ("t", 0)) == ErrorCode.invalid_producer_id_mapping
    assert context.end("tx", pid, epoch, commit=True) == NONE
    assert verify("tx", pid, epoch, ("t", 0)) == ErrorCode.invalid_txn_state  # decided


def test_a_failed_complete_write_leaves_the_decision_to_retry(context: TxnTestContext) -> None:
    pid, epoch = context.begin("tx")
    assert context.end("tx", pid, epoch, commit=False) == NONE
    context.fail_next_append = ErrorCode.kafka_storage_error
    (markers,) = context.write_markers()
    assert context.state("tx") == "PrepareAbort"
    assert context.coordinator.awaits_completion("tx", pid, epoch)
    context.apply(context.coordinator.markers_written("tx", markers.producer_id, epoch))
    assert context.state("tx") == "CompleteAbort"
    assert not context.coordinator.awaits_completion("tx", pid, epoch)
