"""The graph nodes of the KTable-KTable foreign-key join (KIP-213; the protocol is described
in :mod:`streamrt.runtime.processors.fk_join`): subscriptions out of the left table, answered
next to the right table, responses joined next to the left table again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.join_nodes import join_result
from streamrt.runtime.graph.materialized import MaterializedLike, materialize
from streamrt.runtime.graph.nodes import TableNode, no_getter
from streamrt.runtime.graph.topology import REPARTITION_SUFFIX, StreamPartitioner
from streamrt.runtime.processors.fk_join import (
    ForeignTableUpdateProcessor,
    ResponseJoinProcessor,
    SubscriptionReceiveProcessor,
    SubscriptionSendProcessor,
    primary_partition,
)
from streamrt.runtime.processors.join_windows import Joiner
from streamrt.runtime.stores import StoreSpec
from streamrt.serde import BytesSerde, Serde

__all__ = ("foreign_key_join",)

_RAW = BytesSerde()


def _on_keys(
    partitioner: StreamPartitioner | None, key_serde: Serde[Any]
) -> StreamPartitioner | None:
    """A ``TableJoined`` partitioner for a sink of serialized keys: it gets the key and a
    ``None`` value, and must answer None or one partition (as Kafka's FK join checks)."""
    if partitioner is None:
        return None
    chosen = partitioner

    def partitions(topic: str, key: Any, value: Any, count: int) -> Any:
        del value
        answer = chosen(topic, key_serde.deserialize(key), None, count)
        if answer is not None and len(answer) != 1:
            raise ConfigError(
                f"a foreign-key join's partitioner must return None or one partition, "
                f"got {answer!r} for {topic!r}"
            )
        return answer

    return partitions


@dataclass(frozen=True, slots=True)
class _Names:
    """The names one foreign-key join gives its topics, store and nodes."""

    base: str

    @property
    def registration(self) -> str:
        return f"{self.base}-subscription-registration{REPARTITION_SUFFIX}"

    @property
    def response(self) -> str:
        return f"{self.base}-subscription-response{REPARTITION_SUFFIX}"

    @property
    def store(self) -> str:
        return f"{self.base}-subscription-store"

    @property
    def send(self) -> str:
        return f"{self.base}-subscription-send"

    @property
    def response_join(self) -> str:
        return f"{self.base}-response-join"

    @property
    def output_store(self) -> str:
        """The result's store, made only when a downstream operator asks for old values."""
        return f"{self.base}-output-store"


def foreign_key_join(
    left: TableNode,
    right: TableNode,
    fk_of: Callable[[Any, Any], Any],
    joiner: Joiner,
    left_join: bool,
    materialized: MaterializedLike,
    value_serde: Serde[Any] | None,
    name: str | None = None,
    partitioners: tuple[StreamPartitioner | None, StreamPartitioner | None] = (None, None),
) -> TableNode:
    """``left`` joined with the ``right`` row keyed by ``fk_of(left key, left value)``; an
    unmaterialized result cannot be read by key (join it only after materializing it);
    ``name`` names its nodes, stores and topics (Kafka's ``TableJoined.as``);
    ``partitioners``: (left key's for the responses, right key's for the subscriptions),
    Kafka's ``TableJoined.with(partitioner, otherPartitioner)``."""
    topology = left.topology
    topology.request_old_values(left.name)  # both tables send old values, as Kafka's
    topology.request_old_values(right.name)
    names = _Names(name or topology.new_name("KTABLE-FK-JOIN"))
    topology.add_store(StoreSpec(names.store, _RAW, _RAW))
    by_pk, by_fk = partitioners
    by_fk_bytes = _on_keys(by_fk, right.key_serde)
    _send_subscriptions(names, left, right.key_serde, fk_of, left_join, by_fk_bytes)
    # responses go back to the subscriber's partition unless a partitioner says otherwise
    _answer_subscriptions(names, right, _on_keys(by_pk, left.key_serde) or primary_partition)
    vser = value_serde or left.value_serde
    _join_responses(names, left, right.value_serde, joiner, left_join, vser)
    stored = materialize(topology, materialized, left.key_serde, vser)
    unreadable = no_getter("join the result of a foreign-key join only after materializing it")
    return join_result(
        topology, names.response_join, f"{names.base}-materialize", stored, unreadable
    )


def _send_subscriptions(
    names: _Names,
    left: TableNode,
    fk_serde: Serde[Any],
    fk_of: Callable[[Any, Any], Any],
    left_join: bool,
    partitioner: StreamPartitioner | None,
) -> None:
    """1. Left updates become subscriptions keyed by FK (local answers for a null FK)."""
    topology = left.topology
    sink = f"{names.registration}-sink"
    topology.add_processor(
        names.send,
        lambda: SubscriptionSendProcessor(
            fk_of,
            fk_serde,
            left.key_serde,
            left.value_serde,
            left_join,
            sink,
            names.response_join,
        ),
        left.name,
        accepts_changes=True,
    )
    topology.add_sink(
        sink, names.registration, _RAW, _RAW, names.send, internal=True, partitioner=partitioner
    )


def _answer_subscriptions(
    names: _Names, right: TableNode, partitioner: StreamPartitioner | None
) -> None:
    """2. Next to the right table: subscriptions in, right updates out, both as responses
    keyed by the primary key."""
    topology = right.topology
    registration = topology.add_source(
        f"{names.registration}-source", names.registration, _RAW, _RAW, internal=True
    )
    getter, fk_serde, right_serde = right.getter, right.key_serde, right.value_serde
    receive = topology.add_processor(
        f"{names.base}-subscription-receive",
        lambda: SubscriptionReceiveProcessor(names.store, getter, fk_serde, right_serde),
        registration,
        stores=(names.store, *getter.stores),
    )
    update = topology.add_processor(
        f"{names.base}-foreign-update",
        lambda: ForeignTableUpdateProcessor(names.store, fk_serde, right_serde),
        right.name,
        stores=(names.store,),
        accepts_changes=True,
    )
    topology.add_sink(
        f"{names.response}-sink",
        names.response,
        _RAW,
        _RAW,
        receive,
        update,
        internal=True,
        partitioner=partitioner,
    )
    topology.add_copartition_group(registration, right.name)


def _join_responses(
    names: _Names,
    left: TableNode,
    right_serde: Serde[Any],
    joiner: Joiner,
    left_join: bool,
    result_serde: Serde[Any],
) -> None:
    """3. Next to the left table again: responses joined with the current left value. Asked
    for old values (a re-grouping of an unmaterialized result), the join keeps its results in
    a store and sends the one each replaces, as Kafka materializes the result then."""
    topology = left.topology
    responses = topology.add_source(
        f"{names.response}-source", names.response, _RAW, _RAW, internal=True
    )
    getter = left.getter
    output = names.output_store

    def supplier() -> ResponseJoinProcessor:
        keep = output if topology.sends_old_values(names.response_join) else None
        return ResponseJoinProcessor(
            getter, left.key_serde, left.value_serde, right_serde, joiner, left_join, keep
        )

    topology.add_processor(
        names.response_join, supplier, responses, names.send, stores=getter.stores
    )

    def add_output_store() -> None:
        topology.add_store(StoreSpec(output, left.key_serde, result_serde, timestamped=True))
        topology.connect_processor_and_state_stores(names.response_join, stores=(output,))

    topology.old_value_hooks[names.response_join] = add_output_store
    topology.add_copartition_group(responses, left.name)
