"""Kafka API handlers, one module per API family: decode → call core → encode, no business rules.

Every family module has ``register(table, core)``, which puts its APIs, their version ranges and
handlers in the :class:`ApiTable`. To serve a new family (transactions, SASL, ...), write its
module and add it to :data:`FAMILIES`: ApiVersions and routing both follow from the table.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from streamrt.broker.core import ApiTable, BrokerCore
from streamrt.broker.handlers import (
    cluster,
    configs,
    consumer_groups,
    delegation_tokens,
    features,
    fetch,
    groups,
    log_dirs,
    offsets,
    produce,
    producers,
    quorum,
    quotas,
    records,
    replicas,
    security,
    streams_groups,
    topics,
    transactions,
)

__all__ = ("FAMILIES", "build_api_table")

#: The handler families this broker serves, each a module with ``register(table, core)``.
FAMILIES: tuple[ModuleType, ...] = (
    cluster,
    topics,
    configs,
    produce,
    fetch,
    offsets,
    records,
    log_dirs,
    replicas,
    quorum,
    security,
    quotas,
    delegation_tokens,
    features,
    producers,
    groups,
    consumer_groups,
    streams_groups,
    transactions,
)


def build_api_table(core: BrokerCore, families: tuple[ModuleType, ...] = FAMILIES) -> ApiTable:
    table = ApiTable()
    for module in families:
        register: Callable[[ApiTable, BrokerCore], None] = module.register
        register(table, core)
    return table
