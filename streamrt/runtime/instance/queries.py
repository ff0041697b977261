"""StreamsQueries: the metadata and interactive-query facade of one instance.

Which instance holds which tasks and stores (Kafka Streams' StreamsMetadata), which one owns a
key, reading a key from a local store, and removing static members. ``App`` delegates its
``metadata_for_*``, ``query_local`` and ``remove_members`` here; the REST layer calls those.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from streamrt.errors import KafkaError, StreamrtError
from streamrt.key_partition import partition_for_key
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.graph.topology import StreamPartitioner, SubTopology, Topology
from streamrt.runtime.instance.metadata import StreamsMetadata
from streamrt.runtime.instance.store_reads import StoreNotReadyError, StoreRead
from streamrt.runtime.instance.thread_handle import ThreadHandle
from streamrt.runtime.metadata import ThreadMetadata
from streamrt.runtime.processor import Windowed

__all__ = ("StoreNotReadyError", "StreamsQueries", "expand_instance_ids")


@dataclasses.dataclass(frozen=True, slots=True)
class _Started:
    config: StreamsConfig
    instance_id: str
    subtopologies: tuple[SubTopology, ...]


class StreamsQueries:
    """Responsibilities: cluster and local metadata, key → owner, local reads, member removal."""

    def __init__(
        self,
        topology: Topology,
        threads: Callable[[], Sequence[ThreadHandle]],
        read: Callable[[str, StoreRead, float], Any],
    ) -> None:
        self._topology = topology
        self._threads = threads  # the app's current threads, by index
        self._read = read  # run a read on the local thread owning the task (or raise)
        self._started: _Started | None = None
        # instance id → application.server, newest first-hand value (REST host directory)
        self._peer_hosts: dict[str, str] = {}

    def bind(
        self, config: StreamsConfig, instance_id: str, subtopologies: Sequence[SubTopology]
    ) -> None:
        """Called by the app once it started: from now on keys can be located."""
        self._started = _Started(config, instance_id, tuple(subtopologies))

    def set_peer_hosts(self, hosts: Mapping[str, str]) -> None:
        """Instance id → ``host:port`` learned first-hand, newer than the assignment's."""
        self._peer_hosts = dict(hosts)

    @property
    def peer_hosts(self) -> dict[str, str]:
        return dict(self._peer_hosts)

    def _require_started(self) -> _Started:
        if self._started is None:
            raise StreamrtError("app is not started")
        return self._started

    # -- metadata ----------------------------------------------------------------------------

    def metadata_for_local_threads(self) -> list[ThreadMetadata]:
        return [dataclasses.replace(t.metadata(), member_id=t.member_id) for t in self._threads()]

    def metadata_for_all_clients(self) -> list[StreamsMetadata]:
        """Every instance of the application, from the newest assignment any thread holds."""
        infos = [t.assignment_info for t in self._threads() if t.assignment_info]
        if not infos:
            return []
        info = infos[-1]
        by_instance: dict[str, list[Any]] = {}
        for ct in info.cluster:
            by_instance.setdefault(ct.instance_id, []).append(ct)
        started = self._started
        out = []
        for instance, threads in sorted(by_instance.items()):
            server = threads[0].application_server
            if started is not None and instance == started.instance_id:
                server = started.config.application_server
            server = self._peer_hosts.get(instance, server)
            host, port = server.rsplit(":", 1) if server else (None, None)
            tasks = tuple(t for ct in threads for t in ct.tasks)
            subs = {t.split("_")[0] for t in tasks}
            out.append(
                StreamsMetadata(
                    instance_id=instance,
                    host=host,
                    port=int(port) if port else None,
                    thread_instance_ids=tuple(sorted(ct.thread_instance_id for ct in threads)),
                    tasks=tasks,
                    topic_partitions=tuple(sorted(p for ct in threads for p in ct.partitions)),
                    state_store_names=tuple(
                        sorted({s for sub in subs for s in info.stores.get(sub, ())})
                    ),
                )
            )
        return out

    def metadata_for_key(
        self, store: str, key: Any, partitioner: StreamPartitioner | None = None
    ) -> StreamsMetadata | None:
        """The instance that owns ``key`` of ``store`` (None while no assignment is known).

        The partition is the producer's: Kafka's default partitioner, murmur2 of the key
        serialized with the store's key serde, over the store's source topic partitions.
        For window and session stores that is the record key alone (a :class:`Windowed` key
        counts by its ``key``), never the window bytes. With ``partitioner`` (Kafka's
        ``queryMetadataForKey(store, key, StreamPartitioner)``, for data written with a
        custom one) the partition is ``partitioner(topic, key, None, partitions)``: one
        partition, or None for the default.
        Raises KeyError for an unknown store and ValueError for a key the serde cannot encode
        or a partitioner answer that is not one partition in range.
        """
        task_id = self.task_for_key(store, key, partitioner)
        for instance in self.metadata_for_all_clients():
            if task_id in instance.tasks:
                return instance
        return None

    def task_for_key(
        self, store: str, key: Any, partitioner: StreamPartitioner | None = None
    ) -> str:
        started = self._require_started()
        spec = self._topology.stores.get(store)
        sub = next((s for s in started.subtopologies if store in s.stores), None)
        if spec is None or sub is None:
            raise KeyError(store)
        topic = sub.source_topics[0]
        partitions = {
            p for m in self.metadata_for_all_clients() for t, p in m.topic_partitions if t == topic
        }
        if not partitions:
            raise StoreNotReadyError(f"no assignment of {topic} is known yet")
        count = max(partitions) + 1
        chosen = None if partitioner is None else _one_partition(partitioner, topic, key, count)
        if chosen is not None:
            return f"{sub.id}_{chosen}"
        if spec.segments is not None and isinstance(key, Windowed):
            key = key.key  # window/session stores: the record key alone picks the partition
        try:
            key_bytes = spec.key_serde.serialize(key)
        except Exception as exc:
            raise ValueError(f"store {store}: cannot serialize key {key!r}: {exc}") from exc
        if not isinstance(key_bytes, bytes):
            raise ValueError(f"store {store}: key {key!r} serializes to no bytes")
        partition = partition_for_key(key_bytes, count)
        return f"{sub.id}_{partition}"

    # -- interactive queries -----------------------------------------------------------------

    def query_local(self, store: str, key: Any, timeout: float = 10.0) -> Any:
        """Read ``key`` from ``store`` on the local thread that owns its task.

        The read runs on that stream thread's event loop under its commit lock, so it never
        races a task being closed or restored. Raises KeyError (unknown store), ValueError
        (bad key), StoreNotReadyError (the task is not open and running here).
        """
        global_table = self._topology.global_tables.get(store)
        if global_table is not None:  # fully replicated: every instance answers locally
            return global_table.require().get(key)
        spec = self._topology.stores.get(store)
        if spec is not None and spec.segments is not None and not isinstance(key, Windowed):
            raise ValueError(
                f"store {store} is a window/session store: query one window with a Windowed "
                "key, or a time range with query_window"
            )
        return self._on_owner(StoreRead(store, key), timeout)

    def query_window(
        self, store: str, key: Any, time_from: int, time_to: int, timeout: float = 10.0
    ) -> list[tuple[int, int, Any]]:
        """``(start, end, value)`` of ``key``'s windows in a window store (window start in
        ``[time_from, time_to]``) or session store (sessions overlapping the range), read on
        the local thread owning the key's task. Errors as :meth:`query_local`; ValueError for a
        key-value store."""
        spec = self._topology.stores.get(store)
        if spec is not None and spec.segments is None:
            raise ValueError(f"store {store} is a key-value store, not a window store")
        return cast(
            list[tuple[int, int, Any]],
            self._on_owner(StoreRead(store, key, time_from, time_to), timeout),
        )

    def _on_owner(self, read: StoreRead, timeout: float) -> Any:
        """Run ``read`` where the key's task runs: on a local thread's loop, or in the stream
        thread process that owns it (stream.thread.mode=process)."""
        return self._read(self.task_for_key(read.store, read.key), read, timeout)

    # -- membership --------------------------------------------------------------------------

    def remove_members(self, instance_ids: Sequence[str]) -> dict[str, KafkaError | None]:
        """Remove static members now (one batch LeaveGroup, KIP-345) instead of waiting for
        ``session.timeout.ms``. An instance id expands to its threads' ``group.instance.id``s
        (as the coordinator lists them: DescribeGroups, or StreamsGroupDescribe under
        ``group.protocol=streams``); the result maps each id sent to None or its error."""
        config = self._require_started().config
        from streamrt.admin import AdminClient

        group = config.application_id

        async def go() -> dict[str, KafkaError | None]:
            async with AdminClient(
                config.bootstrap_servers, config=config.client_config().for_role("admin")
            ) as admin:
                if config.streams_protocol:  # a streams group: DescribeGroups knows it not
                    members = await admin.streams_group_instance_ids(group)
                else:
                    described = (await admin.describe_groups([group]))[group]
                    members = [
                        m.group_instance_id for m in described.members if m.group_instance_id
                    ]
                return await admin.remove_members(group, expand_instance_ids(instance_ids, members))

        return asyncio.run(go())


def _one_partition(partitioner: StreamPartitioner, topic: str, key: Any, count: int) -> int | None:
    """The partition ``partitioner`` names for ``key`` (None: the default partitioning).
    Kafka requires a singleton set here: a key lives in one partition."""
    answer = partitioner(topic, key, None, count)
    if answer is None:
        return None
    chosen = list(answer) if isinstance(answer, set | frozenset | list | tuple) else [answer]
    if len(chosen) != 1 or type(chosen[0]) is not int or not 0 <= chosen[0] < count:
        raise ValueError(
            f"the stream partitioner must name one partition of {topic!r} (0..{count - 1}) for "
            f"a key's metadata, as Kafka's singleton set; it returned {answer!r}"
        )
    return chosen[0]


def expand_instance_ids(requested: Sequence[str], members: Sequence[str]) -> list[str]:
    """An instance id ``web-3`` → its members ``web-3-thread-N``; other ids stay as they are.
    Each id appears once, so nothing is removed twice."""
    out: list[str] = []
    for wanted in requested:
        threads = [m for m in members if m.startswith(f"{wanted}-thread-")]
        out.extend(threads if threads and wanted not in members else [wanted])
    return list(dict.fromkeys(out))
