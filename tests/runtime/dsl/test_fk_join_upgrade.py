"""The foreign-key join reads what the previous version wrote (its internal records had no
version and no subscriber partition): in-flight subscriptions and responses, and the
subscription store's entries, are read as version 0 after an upgrade."""

from __future__ import annotations

from streamrt.runtime import App
from streamrt.runtime.processors.fk_join import (
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE,
    value_hash,
)
from streamrt.runtime.processors.fk_join_wire import (
    encode_entry,
    encode_response,
    encode_subscription,
    parse_entry,
    parse_response,
    parse_subscription,
    response_partition,
)
from streamrt.serde import serde_for
from streamrt.testing.driver import TopologyTestDriver

JOIN = "fk-KTABLE-FK-JOIN-0000000004"
DIGEST = bytes(range(16))


def test_version_1_round_trips_and_version_0_is_read() -> None:
    sub = encode_subscription(3, DIGEST, b"o1", 5)
    assert parse_subscription(sub) == (3, DIGEST, b"o1", 5)
    assert parse_subscription(bytes([3, 16]) + DIGEST + b"o1") == (3, DIGEST, b"o1", -1)
    assert parse_subscription(bytes([0, 0]) + b"o1") == (0, b"", b"o1", -1)
    resp = encode_response(DIGEST, b"pen", 2)
    assert parse_response(resp) == (DIGEST, b"pen", 2) and response_partition(resp) == 2
    assert parse_response(encode_response(b"", None, -1)) == (b"", None, -1)
    old = bytes([16, 1]) + DIGEST + b"pen"
    assert parse_response(old) == (DIGEST, b"pen", -1) and response_partition(old) == -1
    assert parse_response(bytes([16, 0]) + DIGEST) == (DIGEST, None, -1)
    assert parse_entry(encode_entry(7, DIGEST)) == (7, DIGEST)
    assert parse_entry(encode_entry(7, b"")) == (7, b"")
    assert parse_entry(DIGEST) == (-1, DIGEST) and parse_entry(b"\x00") == (-1, b"")


def _app() -> App:
    a = App({"application.id": "fk"})
    orders = a.table("orders", key_serde="str", value_serde="json")
    products = a.table("products", key_serde="str", value_serde="str")
    orders.join(
        products,
        lambda order, product: f"{order['qty']}x{product}",
        foreign_key=lambda order: order["product"],
        store="order-details",
        value_serde="str",
    ).to_stream().to("out", key_serde="str", value_serde="str")
    return a


def test_records_and_store_entries_of_the_previous_version_still_join() -> None:
    order = {"product": "p1", "qty": 2}
    digest = value_hash(serde_for("json").serialize(order))
    with TopologyTestDriver(_app()) as d:
        o = d.create_input_topic("orders", "str", "json")
        p = d.create_input_topic("products", "str", "str")
        out = d.create_output_topic("out", "str", "str")
        o.pipe_input("o1", order)  # subscribes (a v1 record); p1 does not exist yet
        p.pipe_input("p1", "pen")
        assert out.read_key_values_to_list() == [("o1", "2xpen")]
        # a response the previous version left in flight: joined with the current order
        d.pipe_raw(
            f"{JOIN}-subscription-response-repartition", b"o1", bytes([16, 1]) + digest + b"ink", 1
        )
        assert out.read_key_values_to_list() == [("o1", "2xink")]
        # a subscription it left in flight: answered with the current product
        old_sub = bytes([PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, 16]) + digest + b"o1"
        d.pipe_raw(f"{JOIN}-subscription-registration-repartition", b"p1", old_sub, 2)
        assert out.read_key_values_to_list() == [("o1", "2xpen")]
        p.pipe_input("p1", "blue pen")  # the store entry is the one that subscription wrote
        assert out.read_key_values_to_list() == [("o1", "2xblue pen")]
