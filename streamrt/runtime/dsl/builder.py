"""StreamsBuilder: the DSL's entry point (sources and tables) over one Topology, as Kafka
Streams' ``StreamsBuilder``. ``App.stream``/``App.table`` delegate here."""

from __future__ import annotations

from streamrt.runtime.dsl.global_table import GlobalKTable
from streamrt.runtime.dsl.streams import KStream, KTable
from streamrt.runtime.dsl.table_nodes import table_source
from streamrt.runtime.graph.global_tables import GlobalTableSpec
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.timestamps import TimestampExtractor
from streamrt.serde import SerdeLike, serde_for

__all__ = ("StreamsBuilder",)


class StreamsBuilder:
    def __init__(self, topology: Topology | None = None) -> None:
        self.topology = topology or Topology()

    def stream(
        self,
        topic: str,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> KStream:
        """A KStream reading ``topic``; ``timestamp_extractor(record) -> ms`` overrides the
        ``default.timestamp.extractor`` for this source (see runtime.timestamps)."""
        kser, vser = serde_for(key_serde), serde_for(value_serde)
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
        *,
        store: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> GlobalKTable:
        """A table of *all* partitions of ``topic`` on every instance, queryable as ``store``."""
        spec = GlobalTableSpec(
            store or f"{topic}-global", topic, serde_for(key_serde), serde_for(value_serde)
        )
        self.topology.add_global_table(spec)
        return GlobalKTable(spec)

    def table(
        self,
        topic: str,
        *,
        store: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        in_memory: bool | None = None,
        caching: bool = True,
    ) -> KTable:
        """A KTable materialised from a (compacted) topic into ``store``.

        ``in_memory`` picks the store kind (None: the ``default.dsl.store`` config);
        ``caching=False`` sends every update downstream (no record cache for this store).
        """
        kser, vser = serde_for(key_serde), serde_for(value_serde)
        store_name = store or f"{topic}-table"
        return KTable(
            table_source(self.topology, topic, store_name, (kser, vser), in_memory, caching)
        )
