"""Kafka's ``StreamPartitioner`` (KIP-837) on the embedded broker (issue 38): ``to`` and
``repartition`` put each record in the partitions the partitioner picks (one, several, none,
or the key hash when it answers None), and a foreign-key join's ``TableJoined`` partitioners
route subscriptions and responses to tables that are not partitioned by key hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import DefaultPartitioner

from streamrt.runtime import App
from streamrt.runtime.dsl import Produced, Repartitioned, TableJoined
from tests.kafka_helpers import create_topic, produce, read_all, wait_until


def by_hash(key: str, count: int) -> int:
    """Where the producers' default partitioner (murmur2, as Java's) puts ``key``."""
    every = list(range(count))
    return int(DefaultPartitioner()(key.encode(), every, every))


def not_by_hash(topic: str, key: Any, value: Any, count: int) -> set[int]:
    """The partition after the key hash's: never where the default puts a key."""
    del topic, value
    return {(by_hash(key, count) + 1) % count}


def app(bootstrap: str, state: Path, app_id: str, guarantee: str = "at_least_once") -> App:
    return App(
        {
            "application.id": app_id,
            "bootstrap.servers": bootstrap,
            "processing.guarantee": guarantee,
            "state.dir": str(state),
            "commit.interval.ms": "100",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
        }
    )


def placed(bootstrap: str, topic: str) -> list[tuple[int, str, str]]:
    return sorted(
        (r.partition, r.key.decode(), r.value.decode()) for r in read_all(bootstrap, topic)
    )


def run_until(a: App, done: Any, what: str) -> None:
    a.start()
    try:
        wait_until(done, what=what)
    finally:
        a.stop()
    assert a.fatal_error is None


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_to_and_repartition_follow_the_partitioner(broker, tmp_path: Path, guarantee: str) -> None:
    bootstrap, app_id = broker.bootstrap, f"sinkpart-{guarantee.replace('_', '-')}"
    create_topic(bootstrap, "sp-in", 1)
    create_topic(bootstrap, "sp-out", 3)

    def choose(topic: str, key: str, value: str, count: int) -> set[int] | None:
        assert topic == "sp-out" and count == 3
        return {"one": {1}, "all": {0, 1, 2}, "drop": set()}.get(key)

    a = app(bootstrap, tmp_path, app_id, guarantee)
    stream = a.stream("sp-in", key_serde="str", value_serde="str")
    stream.to("sp-out", Produced.with_("str", "str").with_stream_partitioner(choose))
    moved = stream.repartition(
        Repartitioned.as_("by-value").with_number_of_partitions(2),
        partitioner=lambda t, k, v, n: {int(v) % n},  # the keyword wins over the object's
    )
    moved.to("sp-moved", key_serde="str", value_serde="str")
    create_topic(bootstrap, "sp-moved", 1)
    keys = ["one", "all", "drop", "plain", "one"]
    produce(bootstrap, "sp-in", [(k.encode(), str(i).encode()) for i, k in enumerate(keys)])
    run_until(a, lambda: len(read_all(bootstrap, "sp-moved")) == 5, "the repartitioned records")
    wait_until(lambda: len(read_all(bootstrap, "sp-out")) == 6, what="sp-out's records")
    assert placed(bootstrap, "sp-out") == sorted(
        [
            (1, "one", "0"),
            (0, "all", "1"),
            (1, "all", "1"),
            (2, "all", "1"),  # multicast: one copy in each partition named
            (by_hash("plain", 3), "plain", "3"),  # None: the key hash, as without one
            (1, "one", "4"),
        ]
    )  # "drop": an empty set, sent nowhere
    assert sorted((p, v) for p, _, v in placed(bootstrap, f"{app_id}-by-value-repartition")) == [
        (0, "0"),
        (0, "2"),
        (0, "4"),
        (1, "1"),
        (1, "3"),
    ]


@pytest.mark.parametrize("both", [True, False], ids=["table-joined", "other-partitioner-only"])
def test_foreign_key_join_with_table_joined_partitioners(
    broker, tmp_path: Path, both: bool
) -> None:
    """Both tables are written by a partitioner that never agrees with the key hash: the
    join finds its rows only if subscriptions follow the other table's partitioner and
    responses go back where the left row is: by this table's partitioner, or without one
    (Kafka's default) to the partition the subscription came from."""
    bootstrap, app_id = broker.bootstrap, f"fkpart-{both}"
    orders_topic, customers_topic, out_topic = (f"{app_id}-{t}" for t in ("o", "c", "out"))
    for topic in (orders_topic, customers_topic):
        create_topic(bootstrap, topic, 2)
    create_topic(bootstrap, out_topic, 1)
    customers = {f"c{i}": f"name{i}" for i in range(6)}
    orders = {f"o{i}": f"c{i % 6}" for i in range(12)}
    for topic, rows in ((customers_topic, customers), (orders_topic, orders)):
        produce(
            bootstrap,
            topic,
            [(k.encode(), v.encode()) for k, v in rows.items()],
            partitions=[not_by_hash(topic, k, None, 2).pop() for k in rows],
        )
    a = app(bootstrap, tmp_path, app_id)
    left = a.table(orders_topic, key_serde="str", value_serde="str")
    right = a.table(customers_topic, key_serde="str", value_serde="str")
    joiner = lambda order, customer: f"{order}/{customer}"  # noqa: E731
    if both:
        tj = TableJoined.with_(not_by_hash, not_by_hash).with_name("orders-fk")
        joined = left.join(right, joiner, foreign_key=lambda c: c, table_joined=tj)
    else:
        joined = left.join(
            right, joiner, foreign_key=lambda c: c, other_partitioner=not_by_hash, name="orders-fk"
        )
    joined.to_stream().to(out_topic, key_serde="str", value_serde="str")
    run_until(a, lambda: len(read_all(bootstrap, out_topic)) >= 12, "the join's results")
    results = {r.key.decode(): r.value.decode() for r in read_all(bootstrap, out_topic)}
    assert results == {o: f"{c}/{customers[c]}" for o, c in orders.items()}
    registrations = read_all(bootstrap, f"{app_id}-orders-fk-subscription-registration-repartition")
    assert {r.partition for r in registrations} == {0, 1}
    for r in registrations:  # each subscription went where its customer row lives
        assert r.partition == not_by_hash("", r.key.decode(), None, 2).pop()
