"""Declaring state stores for the processor API, as Kafka Streams' ``Stores`` factory.

A *supplier* names a store and says what it is (key-value, timestamped key-value, window,
session, versioned; persistent or in memory), as Kafka's ``*BytesStoreSupplier``; a *builder*
adds the serdes and whether a record cache fronts it and whether it is logged, as Kafka's
``StoreBuilder``. ``StreamsBuilder.add_state_store(builder)`` (or
``Topology.add_state_store(builder, *processor_names)``) registers it, and a processor
connected to it (``stream.process(supplier, "store")``) reads it with
``context.get_store("store")``. Everything ends as the :class:`StoreSpec` the DSL's own stores
use, so a processor's store is restored, standby-replicated and queried like theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal

from streamrt.errors import ConfigError
from streamrt.runtime.stores import StoreSpec
from streamrt.serde import SerdeLike, serde_for
from streamrt.state.store import IN_MEMORY, ROCKS_DB, StoreKind
from streamrt.state.window_store import SegmentSpec

__all__ = ("StoreBuilder", "StoreSupplier", "Stores")

SupplierType = Literal["key_value", "timestamped_key_value", "window", "session", "versioned"]


def _ms(value: int | timedelta, what: str) -> int:
    ms = int(value.total_seconds() * 1000) if isinstance(value, timedelta) else int(value)
    if ms < 0:
        raise ConfigError(f"{what} must not be negative, got {ms} ms")
    return ms


def _name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise ConfigError(f"a store needs a non-empty name, got {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class StoreSupplier:
    """What a store is, before its serdes (Kafka's ``KeyValueBytesStoreSupplier``,
    ``WindowBytesStoreSupplier``, ``SessionBytesStoreSupplier``, ...)."""

    name: str
    type: SupplierType
    kind: StoreKind
    retention_ms: int | None = None  # window and session stores
    window_size_ms: int | None = None  # window stores
    history_retention_ms: int | None = None  # versioned stores
    segment_interval_ms: int = 0  # window/session/versioned: 0 = the default for retention


@dataclass(frozen=True, slots=True)
class StoreBuilder:
    """A supplier with serdes, caching and logging (Kafka's ``StoreBuilder``): the store a
    topology registers. Caching is off and logging on by default, as in Kafka."""

    supplier: StoreSupplier
    key_serde: SerdeLike = None
    value_serde: SerdeLike = None
    caching: bool = False
    logging: bool = True
    log_config: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.supplier.name

    def with_caching_enabled(self) -> StoreBuilder:
        """A record cache in front (key-value stores; ``statestore.cache.max.bytes`` > 0)."""
        return replace(self, caching=True)

    def with_caching_disabled(self) -> StoreBuilder:
        return replace(self, caching=False)

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> StoreBuilder:
        """Log every write to the store's changelog topic (the default). ``config`` (topic
        configs) is not supported yet: the changelog gets the runtime's settings."""
        if config:
            raise ConfigError(
                f"store {self.name}: changelog topic configs in with_logging_enabled() are "
                "not supported; the changelog is created with the runtime's settings"
            )
        return replace(self, logging=True)

    def with_logging_disabled(self) -> StoreBuilder:
        """Kafka's unlogged store: not supported, so refused rather than silently logged."""
        raise ConfigError(
            f"store {self.name}: stores without a changelog are not supported; every store is "
            "logged so that it can be restored (leave logging enabled)"
        )

    def spec(self) -> StoreSpec:
        """The store as the topology keeps it."""
        s = self.supplier
        kser, vser = serde_for(self.key_serde), serde_for(self.value_serde)
        if s.type in ("key_value", "timestamped_key_value"):
            return StoreSpec(
                s.name,
                kser,
                vser,
                s.kind,
                self.caching,
                timestamped=s.type == "timestamped_key_value",
            )
        if s.type == "versioned":
            return StoreSpec(
                s.name,
                kser,
                vser,
                s.kind,
                caching=False,
                versioned_history_ms=s.history_retention_ms,
            )
        assert s.retention_ms is not None
        by: Literal["start", "end"] = "end" if s.type == "session" else "start"
        segments = SegmentSpec(s.retention_ms, by, s.segment_interval_ms)
        return StoreSpec(
            s.name,
            kser,
            vser,
            s.kind,
            caching=False,  # window and session stores are written through
            segments=segments,
            window_size_ms=s.window_size_ms,
        )


def _window(
    name: str,
    kind: StoreKind,
    retention: int | timedelta,
    window_size: int | timedelta,
    retain_duplicates: bool,
) -> StoreSupplier:
    retention_ms, size_ms = _ms(retention, "retention"), _ms(window_size, "window size")
    if size_ms <= 0:
        raise ConfigError(f"window store {name}: the window size must be positive")
    if size_ms > retention_ms:
        raise ConfigError(
            f"window store {name}: the retention ({retention_ms} ms) must be at least the "
            f"window size ({size_ms} ms)"
        )
    if retain_duplicates:
        raise ConfigError(f"window store {name}: retain_duplicates is not supported")
    return StoreSupplier(
        _name(name), "window", kind, retention_ms=retention_ms, window_size_ms=size_ms
    )


def _session(name: str, kind: StoreKind, retention: int | timedelta) -> StoreSupplier:
    return StoreSupplier(_name(name), "session", kind, retention_ms=_ms(retention, "retention"))


class Stores:
    """Kafka's ``Stores`` with Python names: ``Stores.persistent_key_value_store("s")`` etc.
    give suppliers; ``Stores.key_value_store_builder(supplier, "str", "json")`` etc. give
    the builders to register."""

    @staticmethod
    def persistent_key_value_store(name: str) -> StoreSupplier:
        return StoreSupplier(_name(name), "key_value", ROCKS_DB)

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> StoreSupplier:
        return StoreSupplier(_name(name), "timestamped_key_value", ROCKS_DB)

    @staticmethod
    def in_memory_key_value_store(name: str) -> StoreSupplier:
        return StoreSupplier(_name(name), "key_value", IN_MEMORY)

    @staticmethod
    def persistent_window_store(
        name: str,
        retention: int | timedelta,
        window_size: int | timedelta,
        retain_duplicates: bool = False,
    ) -> StoreSupplier:
        return _window(name, ROCKS_DB, retention, window_size, retain_duplicates)

    persistent_timestamped_window_store = persistent_window_store  # windows keep timestamps

    @staticmethod
    def in_memory_window_store(
        name: str,
        retention: int | timedelta,
        window_size: int | timedelta,
        retain_duplicates: bool = False,
    ) -> StoreSupplier:
        return _window(name, IN_MEMORY, retention, window_size, retain_duplicates)

    @staticmethod
    def persistent_session_store(name: str, retention: int | timedelta) -> StoreSupplier:
        return _session(name, ROCKS_DB, retention)

    @staticmethod
    def in_memory_session_store(name: str, retention: int | timedelta) -> StoreSupplier:
        return _session(name, IN_MEMORY, retention)

    @staticmethod
    def persistent_versioned_key_value_store(
        name: str, history_retention: int | timedelta
    ) -> StoreSupplier:
        """KIP-889's versioned store: every version kept for ``history_retention``."""
        history = _ms(history_retention, "history retention")
        return StoreSupplier(_name(name), "versioned", ROCKS_DB, history_retention_ms=history)

    @staticmethod
    def _builder(
        supplier: StoreSupplier,
        types: tuple[SupplierType, ...],
        key_serde: SerdeLike,
        value_serde: SerdeLike,
    ) -> StoreBuilder:
        if not isinstance(supplier, StoreSupplier) or supplier.type not in types:
            raise ConfigError(
                f"this builder needs a {' or '.join(types)} supplier, got {supplier!r}"
            )
        return StoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def key_value_store_builder(
        supplier: StoreSupplier, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> StoreBuilder:
        return Stores._builder(supplier, ("key_value",), key_serde, value_serde)

    @staticmethod
    def timestamped_key_value_store_builder(
        supplier: StoreSupplier, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> StoreBuilder:
        """Rows keep a timestamp (``get_with_timestamp``); a plain key-value supplier is
        upgraded, as Kafka does."""
        if isinstance(supplier, StoreSupplier) and supplier.type == "key_value":
            supplier = replace(supplier, type="timestamped_key_value")
        return Stores._builder(supplier, ("timestamped_key_value",), key_serde, value_serde)

    @staticmethod
    def window_store_builder(
        supplier: StoreSupplier, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> StoreBuilder:
        return Stores._builder(supplier, ("window",), key_serde, value_serde)

    timestamped_window_store_builder = window_store_builder

    @staticmethod
    def session_store_builder(
        supplier: StoreSupplier, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> StoreBuilder:
        return Stores._builder(supplier, ("session",), key_serde, value_serde)

    @staticmethod
    def versioned_key_value_store_builder(
        supplier: StoreSupplier, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> StoreBuilder:
        return Stores._builder(supplier, ("versioned",), key_serde, value_serde)


def store_spec(store: StoreBuilder | Any) -> StoreSpec:
    """The spec of a builder (a :class:`StoreSpec` passes as it is)."""
    if isinstance(store, StoreBuilder):
        return store.spec()
    if isinstance(store, StoreSpec):
        return store
    raise ConfigError(f"add_state_store needs a Stores.*_builder(...), got {store!r}")
