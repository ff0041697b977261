"""StreamsBuilder: the DSL's entry point (sources and tables) over one Topology, as Kafka
Streams' ``StreamsBuilder``. ``App.stream``/``App.table`` delegate here."""

from __future__ import annotations

from streamrt.runtime import operators as ops
from streamrt.runtime.dsl import KStream, KTable, store_kind
from streamrt.runtime.topology import StoreSpec, Topology
from streamrt.serde import SerdeLike, serde_for

__all__ = ("StreamsBuilder",)


class StreamsBuilder:
    def __init__(self, topology: Topology | None = None) -> None:
        self.topology = topology or Topology()

    def stream(
        self, topic: str, *, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> KStream:
        """A KStream reading ``topic``."""
        kser, vser = serde_for(key_serde), serde_for(value_serde)
        name = self.topology.add_source(self.topology.new_name("KSTREAM-SOURCE"), topic, kser, vser)
        return KStream(self.topology, name, kser, vser)

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
        source = self.topology.add_source(
            self.topology.new_name("KTABLE-SOURCE"), topic, kser, vser
        )
        self.topology.add_store(StoreSpec(store_name, kser, vser, store_kind(in_memory), caching))
        node = self.topology.add_processor(
            self.topology.new_name("KTABLE-MATERIALIZE"),
            lambda: ops.TableSourceProcessor(store_name),
            source,
            stores=(store_name,),
        )
        return KTable(self.topology, node, store_name, kser, vser)
