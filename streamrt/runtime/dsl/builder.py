"""StreamsBuilder: the DSL's entry point (sources and tables) over one Topology, as Kafka
Streams' ``StreamsBuilder``. ``App.stream``/``App.table`` delegate here."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from streamrt.runtime.dsl.global_table import GlobalKTable
from streamrt.runtime.dsl.options import Consumed, pick, removed_keywords
from streamrt.runtime.dsl.streams import KStream, KTable
from streamrt.runtime.dsl.table_nodes import table_source
from streamrt.runtime.graph.global_tables import GlobalTableSpec
from streamrt.runtime.graph.materialized import Materialized, MaterializedLike
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.store_builders import StoreBuilder
from streamrt.runtime.timestamps import TimestampExtractor
from streamrt.runtime.windows import to_ms
from streamrt.serde import SerdeLike, serde_for

__all__ = ("StreamsBuilder",)


class StreamsBuilder:
    def __init__(self, topology: Topology | None = None) -> None:
        self.topology = topology or Topology()

    def add_state_store(self, builder: StoreBuilder) -> StreamsBuilder:
        """Register a processor-API store (``Stores.*_builder(...)``), as Kafka's
        ``StreamsBuilder.addStateStore``; processors name it in ``process(supplier, name)``."""
        self.topology.add_state_store(builder)
        return self

    def stream(
        self,
        topic: str,
        consumed: Consumed | None = None,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> KStream:
        """A KStream reading ``topic``; ``timestamp_extractor(record) -> ms`` overrides the
        ``default.timestamp.extractor`` for this source (see runtime.timestamps). ``consumed``
        carries the same as the keywords (a keyword wins)."""
        c = consumed or Consumed()
        kser, vser = (
            serde_for(pick(key_serde, c.key_serde)),
            serde_for(pick(value_serde, c.value_serde)),
        )
        timestamp_extractor = pick(timestamp_extractor, c.timestamp_extractor)
        name = self.topology.add_source(
            self.topology.new_name("KSTREAM-SOURCE"),
            topic,
            kser,
            vser,
            timestamp_extractor=timestamp_extractor,
        )
        return KStream(StreamNode(self.topology, name, kser, vser))

    def global_table(
        self,
        topic: str,
        consumed: Consumed | None = None,
        *,
        store: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> GlobalKTable:
        """A table of *all* partitions of ``topic`` on every instance, queryable as ``store``."""
        c = consumed or Consumed()
        kser, vser = (
            serde_for(pick(key_serde, c.key_serde)),
            serde_for(pick(value_serde, c.value_serde)),
        )
        spec = GlobalTableSpec(store or f"{topic}-global", topic, kser, vser)
        self.topology.add_global_table(spec)
        return GlobalKTable(spec)

    def table(
        self,
        /,
        topic: str,
        consumed: Consumed | None = None,
        *,
        store: MaterializedLike = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        in_memory: bool | None = None,
        caching: bool = True,
        versioned_history_ms: int | timedelta | None = None,
        **removed: Any,
    ) -> KTable:
        """A KTable materialised from a (compacted) topic into ``store`` (a name or a
        ``Materialized``; None: ``<topic>-table``).

        ``versioned_history_ms`` (or ``Materialized.as_versioned``) makes the store a
        versioned store keeping that much history (KIP-914): joins read it as of a record's
        time. ``in_memory`` picks the store kind (None: the ``default.dsl.store`` config);
        ``caching=False`` sends every update downstream (no record cache for this store).
        ``consumed`` and a ``Materialized`` carry the same as the keywords (a keyword wins).
        """
        removed_keywords("table", removed)
        c = consumed or Consumed()
        m = Materialized(store) if isinstance(store, str) else (store or Materialized(""))
        key_serde, value_serde = pick(key_serde, m.key_serde), pick(value_serde, m.value_serde)
        kser, vser = (
            serde_for(pick(key_serde, c.key_serde)),
            serde_for(pick(value_serde, c.value_serde)),
        )
        in_memory = pick(in_memory, m.in_memory)
        store_name = m.name or f"{topic}-table"
        history = pick(versioned_history_ms, m.versioned_history_ms)
        if history is not None:
            history = to_ms(history, "versioned_history_ms")
        return KTable(
            table_source(
                self.topology, topic, store_name, (kser, vser), in_memory, caching, history
            )
        )
