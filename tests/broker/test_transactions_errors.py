"""Bad and unknown transactional requests get Kafka's error codes on a live connection."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from confluent_kafka import Producer

from streamrt.broker.embedded import BrokerThread
from streamrt.errors import ErrorCode
from tests.broker.transactions_support import (
    raw_frame,
    raw_request,
    start_txn_broker,
)
from tests.kafka_helpers import create_topic


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    b = start_txn_broker(Path(tmp_path_factory.mktemp("txn-errors")))
    create_topic(b.bootstrap, "t")
    yield b
    b.stop()


def test_api_versions_advertise_the_transaction_apis(broker: BrokerThread) -> None:
    resp = raw_request(
        broker.bootstrap, 18, 3, client_software_name="t", client_software_version="1"
    )
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[22] == (0, 5)  # InitProducerId
    assert ranges[24] == (0, 3)  # AddPartitionsToTxn (client path)
    assert ranges[25] == (0, 4)  # AddOffsetsToTxn
    assert ranges[26] == (0, 4)  # EndTxn
    assert ranges[28] == (0, 4)  # TxnOffsetCommit
    assert ranges[65] == (0, 0)  # DescribeTransactions
    assert ranges[66] == (0, 1)  # ListTransactions
    assert 27 not in ranges  # WriteTxnMarkers: markers are written in-process


def test_find_coordinator_for_transactions(broker: BrokerThread) -> None:
    found = raw_request(broker.bootstrap, 10, 3, key="tx", key_type=1)
    assert (found.error_code, found.port) == (ErrorCode.none, broker.broker.core.port)
    bad = raw_request(broker.bootstrap, 10, 3, key="tx", key_type=7)
    assert bad.error_code == ErrorCode.invalid_request


def test_unknown_transactional_id(broker: BrokerThread) -> None:
    end = raw_request(
        broker.bootstrap,
        26,
        3,
        transactional_id="nope",
        producer_id=1,
        producer_epoch=0,
        committed=True,
    )
    assert end.error_code == ErrorCode.invalid_producer_id_mapping
    offsets = raw_request(
        broker.bootstrap,
        25,
        0,
        transactional_id="nope",
        producer_id=1,
        producer_epoch=0,
        group_id="g",
    )
    assert offsets.error_code == ErrorCode.invalid_producer_id_mapping
    add = raw_request(
        broker.bootstrap,
        24,
        3,
        v3_and_below_transactional_id="nope",
        v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[{"name": "t", "partitions": [0]}],
    )
    (result,) = add.results_by_topic_v3_and_below[0].results_by_partition
    assert result.partition_error_code == ErrorCode.invalid_producer_id_mapping
    commit = raw_request(
        broker.bootstrap,
        28,
        3,
        transactional_id="nope",
        group_id="g",
        producer_id=1,
        producer_epoch=0,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    }
                ],
            }
        ],
    )
    assert commit.topics[0].partitions[0].error_code == ErrorCode.invalid_txn_state
    # kio refuses to decode the -1 start time Kafka sends for an unknown id: read the bytes.
    # correlation id (4), header tags (1), throttle (4), compact array length (1), error (2)
    frame = raw_frame(broker.bootstrap, 65, 0, transactional_ids=["nope"])
    assert struct.unpack_from(">h", frame, 10)[0] == ErrorCode.transactional_id_not_found
    listed = raw_request(
        broker.bootstrap, 66, 1, state_filters=["Nope"], producer_id_filters=[], duration_filter=-1
    )
    assert (listed.error_code, list(listed.unknown_state_filters)) == (ErrorCode.none, ["Nope"])


def test_bad_init_producer_id(broker: BrokerThread) -> None:
    empty = raw_request(
        broker.bootstrap,
        22,
        4,
        transactional_id="",
        transaction_timeout=1000,
        producer_id=-1,
        producer_epoch=-1,
    )
    assert empty.error_code == ErrorCode.invalid_request
    timeout = raw_request(
        broker.bootstrap,
        22,
        4,
        transactional_id="tx",
        transaction_timeout=0,
        producer_id=-1,
        producer_epoch=-1,
    )
    assert timeout.error_code == ErrorCode.invalid_transaction_timeout


def test_transactional_produce_outside_the_transaction_is_refused(broker: BrokerThread) -> None:
    init = raw_request(
        broker.bootstrap,
        22,
        4,
        transactional_id="tx-raw",
        transaction_timeout=60_000,
        producer_id=-1,
        producer_epoch=-1,
    )
    assert init.error_code == ErrorCode.none
    builder = DefaultRecordBatchBuilder(2, 0, 1, init.producer_id, init.producer_epoch, 0, 1 << 20)
    builder.append(0, timestamp=1_000, key=None, value=b"v", headers=[])
    records = bytes(builder.build())

    def produce(transactional_id: str | None) -> ErrorCode:
        resp = raw_request(
            broker.bootstrap,
            0,
            9,
            transactional_id=transactional_id,
            acks=-1,
            timeout=5000,
            topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
        )
        return ErrorCode(resp.responses[0].partition_responses[0].error_code)

    assert produce("tx-raw") == ErrorCode.invalid_txn_state  # partition never added
    assert produce(None) == ErrorCode.transactional_id_authorization_failed


def test_describe_and_list_an_open_transaction(broker: BrokerThread) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-admin"})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("t", value=b"v")
    p.flush(10)
    (state,) = raw_request(
        broker.bootstrap, 65, 0, transactional_ids=["tx-admin"]
    ).transaction_states
    assert (state.error_code, state.transaction_state) == (ErrorCode.none, "Ongoing")
    assert [(t.topic, list(t.partitions)) for t in state.topics] == [("t", [0])]
    assert state.transaction_start_time.timestamp() > 0
    listed = raw_request(
        broker.bootstrap,
        66,
        1,
        state_filters=["Ongoing"],
        producer_id_filters=[],
        duration_filter=-1,
    )
    assert [(s.transactional_id, s.producer_id) for s in listed.transaction_states] == [
        ("tx-admin", state.producer_id)
    ]
    p.abort_transaction(15)
    (state,) = raw_request(
        broker.bootstrap, 65, 0, transactional_ids=["tx-admin"]
    ).transaction_states
    assert state.transaction_state in ("PrepareAbort", "CompleteAbort")
