"""Kafka API handlers, one module per API family: decode → call core → encode, no business rules."""

from __future__ import annotations

from streamrt.broker.core import ApiTable, BrokerCore
from streamrt.broker.handlers import (
    cluster,
    configs,
    fetch,
    groups,
    offsets,
    produce,
    topics,
    transactions,
)

__all__ = ("build_api_table",)


def build_api_table(core: BrokerCore) -> ApiTable:
    table = ApiTable()
    for module in (cluster, topics, configs, produce, fetch, offsets):
        module.register(table)
    groups.register(table, core)
    transactions.register(table, core)
    return table
