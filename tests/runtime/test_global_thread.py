"""The global thread on the real embedded broker: it reads what the app's consumers may read.

Under exactly_once_v2 every consumer of Kafka Streams reads committed data only, the global
one too; so does a global consumer given ``global.consumer.isolation.level=read_committed``.
A record of an aborted transaction must never reach a global store (it was never written, as
far as the app is concerned), at the restore nor afterwards. The records come from a real
transactional confluent-kafka producer.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, produce, wait_until


def _transaction(producer: Producer, topic: str, records: dict[bytes, bytes], commit: bool) -> None:
    producer.begin_transaction()
    for key, value in records.items():
        producer.produce(topic, key=key, value=value, partition=0)
    if commit:
        producer.commit_transaction(30)
    else:
        assert producer.flush(30) == 0  # written, then aborted
        producer.abort_transaction(30)


@pytest.mark.parametrize(
    "reading",
    [
        {"processing.guarantee": "exactly_once_v2"},
        {"global.consumer.isolation.level": "read_committed"},
    ],
    ids=["exactly-once", "global-consumer-setting"],
)
def test_a_global_store_never_holds_an_aborted_record(
    broker, tmp_path: Path, reading: dict[str, str]
) -> None:
    b = broker.bootstrap
    topic, app_id = "glob-rates", "glob-committed"
    for name in (topic, "glob-visits", "glob-out"):
        create_topic(b, name, 1)
    producer = Producer({"bootstrap.servers": b, "transactional.id": "glob-writer"})
    producer.init_transactions(30)
    _transaction(producer, topic, {b"a": b"1"}, commit=True)
    _transaction(producer, topic, {b"b": b"aborted"}, commit=False)
    _transaction(producer, topic, {b"c": b"3"}, commit=True)
    app = App(
        {
            "application.id": app_id,
            "bootstrap.servers": b,
            "state.dir": str(tmp_path),
            "commit.interval.ms": "200",
            **reading,
        }
    )
    rates = app.global_table(topic, store="rates", key_serde="str", value_serde="str")
    app.stream("glob-visits", key_serde="str", value_serde="str").join(
        rates, lambda v, r: f"{v}@{r}", key_mapper=lambda _k, v: v
    ).to("glob-out", key_serde="str", value_serde="str")
    app.start()
    try:
        # restored: the committed records, not the aborted one between them
        assert {k: app.query_local("rates", k) for k in "abc"} == {"a": "1", "b": None, "c": "3"}
        _transaction(producer, topic, {b"d": b"aborted"}, commit=False)
        _transaction(producer, topic, {b"e": b"5"}, commit=True)
        produce(b, topic, [(b"f", b"6")], partition=0)  # a plain record after them
        wait_until(lambda: app.query_local("rates", "f") == "6", what="followed past the abort")
        assert {k: app.query_local("rates", k) for k in "de"} == {"d": None, "e": "5"}
    finally:
        app.stop()
        producer.flush(10)
    assert app.fatal_error is None
