"""Where a DSL result is stored: ``Materialized`` and the store specs it registers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from streamrt.errors import ConfigError
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.stores import StoreSpec
from streamrt.runtime.windows import to_ms
from streamrt.serde import Serde, SerdeLike, serde_for
from streamrt.state.store import IN_MEMORY, ROCKS_DB, StoreKind

__all__ = ("Materialized", "MaterializedLike", "materialize", "store_argument", "store_kind")


@dataclass(frozen=True, slots=True)
class Materialized:
    """Where a table is stored: a queryable store name, optional serdes and store kind;
    ``versioned_history_ms`` makes it a versioned store keeping that much history (KIP-914)."""

    name: str
    key_serde: SerdeLike = None
    value_serde: SerdeLike = None
    in_memory: bool | None = None
    versioned_history_ms: int | None = None

    @classmethod
    def as_(cls, name: str, **kwargs: Any) -> Materialized:
        """``Materialized.as_("store")``, as Kafka's ``Materialized.as(name)``."""
        return cls(name, **kwargs)

    @classmethod
    def as_versioned(
        cls, name: str, history_retention: int | timedelta, **kwargs: Any
    ) -> Materialized:
        """A versioned store, as Kafka's ``Materialized.as(Stores.persistentVersionedKeyValue
        Store(name, historyRetention))`` (``in_memory=True``: the same on an in-memory store);
        the history in ms or a ``timedelta``."""
        ms = to_ms(history_retention, "history retention")
        if ms < 0:
            raise ValueError(f"history retention must be >= 0, got {ms}")
        return cls(name, versioned_history_ms=ms, **kwargs)


MaterializedLike = str | Materialized | None


def store_argument(topology: Topology, store: MaterializedLike, prefix: str) -> Materialized:
    """What a ``store=`` argument means: a store name, a ``Materialized``, or None (an
    internal store named as Kafka names them, ``<prefix>-STATE-STORE-<n>``)."""
    if store is None:
        return Materialized(topology.new_name(f"{prefix}-STATE-STORE"))
    if isinstance(store, str):
        return Materialized(store)
    if isinstance(store, Materialized):
        return store
    raise ConfigError(f"store= takes a store name or a Materialized, got {store!r}")


def store_kind(in_memory: bool | None) -> StoreKind | None:
    """The store kind an ``in_memory=`` argument asks for (None: ``default.dsl.store``)."""
    return None if in_memory is None else (IN_MEMORY if in_memory else ROCKS_DB)


def materialize(
    topology: Topology,
    materialized: MaterializedLike,
    key_serde: Serde[Any],
    value_serde: Serde[Any],
) -> tuple[str | None, Serde[Any], Serde[Any]]:
    """Register the store a ``materialized`` argument asks for; (None, serdes) if none."""
    if materialized is None:
        return None, key_serde, value_serde
    spec = Materialized(materialized) if isinstance(materialized, str) else materialized
    kser = serde_for(spec.key_serde) if spec.key_serde is not None else key_serde
    vser = serde_for(spec.value_serde) if spec.value_serde is not None else value_serde
    topology.add_store(
        StoreSpec(spec.name, kser, vser, store_kind(spec.in_memory), timestamped=True)
    )
    return spec.name, kser, vser
