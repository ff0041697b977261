"""A lost ``meta/producer-id-block.json`` (review6): after the restart the transaction
coordinator's loaded transactional ids keep their producer ids to themselves, so a new
transactional id cannot be handed one of them (the two producers would fence each other)."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer

from streamrt.broker.embedded import BrokerThread
from tests.broker.transactions_support import start_txn_broker


def _producer_id(broker: BrokerThread, txn_id: str) -> int:
    assert broker.broker is not None and broker.broker.core is not None
    txn = broker.broker.core.txn
    assert txn is not None
    return txn.coordinator.transactions[txn_id].producer_id


def test_new_transactional_id_gets_a_producer_id_no_loaded_one_holds(tmp_path: Path) -> None:
    broker = start_txn_broker(tmp_path / "broker")
    try:
        first = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "first"})
        first.init_transactions(15)  # no record yet: only __transaction_state knows its id
        held = _producer_id(broker, "first")
        broker.stop()
        (tmp_path / "broker" / "meta" / "producer-id-block.json").unlink()
        broker.start()
        assert _producer_id(broker, "first") == held
        second = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "second"})
        second.init_transactions(15)
        assert _producer_id(broker, "second") > held
    finally:
        broker.stop()
