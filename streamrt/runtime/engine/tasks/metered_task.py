"""MeteredTask: a StreamTask that also counts the records each processor node processed.

Why a subclass: Kafka Streams records ``stream-processor-node-metrics`` only at
``metrics.recording.level`` DEBUG, so an INFO application pays nothing per node and record;
the TaskFactory builds this class only when DEBUG (or TRACE) asks for it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.runtime.graph.topology import SourceNode

__all__ = ("MeteredTask",)


class MeteredTask(StreamTask):
    """Counts per node: a source's records by input topic, every other node's deliveries."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._delivered: Counter[str] = Counter()
        self._consumed: Counter[str] = Counter()  # input topic → records taken in
        self._source_of = {
            self.topology.topic_of(node, self.application_id): name
            for name in self.subtopology.nodes
            if isinstance(node := self.topology.nodes[name], SourceNode)
        }

    def process(
        self,
        topic: str,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Any = (),
        extracted: int | None = None,
    ) -> None:
        self._consumed[topic] += 1
        super().process(topic, offset, timestamp, key, value, headers, extracted)

    def deliver(self, node_name: str, key: Any, value: Any) -> None:
        self._delivered[node_name] += 1
        super().deliver(node_name, key, value)

    def node_records(self) -> dict[str, int]:
        """Processor node → records it processed (a source: every record of its topic)."""
        out = dict(self._delivered)
        for topic, n in dict(self._consumed).items():
            source = self._source_of.get(topic)
            if source is not None:
                out[source] = out.get(source, 0) + n
        return out
