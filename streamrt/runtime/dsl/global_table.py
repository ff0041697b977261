"""The DSL handle of a global table (``StreamsBuilder.global_table``); see
:mod:`streamrt.runtime.graph.global_tables` and :mod:`streamrt.runtime.processors.global_thread`."""

from __future__ import annotations

from streamrt.runtime.graph.global_tables import GlobalTableSpec

__all__ = ("GlobalKTable",)


class GlobalKTable:
    """A table of every partition of a topic on every instance: join a stream with it
    (``KStream.join(table, joiner, key_mapper=...)``), query it by store name."""

    def __init__(self, spec: GlobalTableSpec) -> None:
        self.spec = spec

    @property
    def store(self) -> str:
        return self.spec.name
