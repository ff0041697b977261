"""App: the object users build a topology on and run.

Responsibilities: hold the config and topology; create internal topics; run and supervise
``num.stream.threads`` stream threads (a dead thread is replaced with the same index, so its
static member id is kept); publish events and metadata; stop the instance on fatal errors
such as FENCED_INSTANCE_ID.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aiokafka.partitioner import murmur2

from streamrt.errors import ConfigError, KafkaError, StreamrtError
from streamrt.logs import fields
from streamrt.runtime import operators as ops
from streamrt.runtime.config import StreamsConfig, read_env
from streamrt.runtime.dsl import KStream, KTable
from streamrt.runtime.internal_topics import ensure_internal_topics
from streamrt.runtime.metadata import StreamsMetadata, ThreadMetadata
from streamrt.runtime.thread import FatalThreadError, StreamThread, ThreadEnv
from streamrt.runtime.topology import StoreSpec, Topology
from streamrt.serde import SerdeLike, serde_for

if TYPE_CHECKING:
    from streamrt.rest.server import RestServer

__all__ = ("App", "AppError", "StoreNotReadyError")

logger = logging.getLogger(__name__)

EventCallback = Callable[[dict[str, Any]], None]


class AppError(StreamrtError):
    """The instance stopped because of a fatal error (its message says which)."""


class StoreNotReadyError(StreamrtError):
    """The key's task is not open here yet (rebalancing or restoring): ask again shortly."""


class App:
    """A Kafka Streams-style application. Configure with Kafka Streams' names::

    app = App({"application.id": "wordcount", "bootstrap.servers": "localhost:9092"})
    app.stream("text", value_serde="str").flat_map(...).group_by_key().count("counts")
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.settings: dict[str, Any] = dict(config or {})
        self.settings.update({k.replace("_", "."): v for k, v in kwargs.items()})
        self.topology = Topology()
        self.config: StreamsConfig | None = None
        self.instance_id = ""
        self.threads: dict[int, StreamThread] = {}
        self.fatal_error: BaseException | None = None
        self._callbacks: list[EventCallback] = []
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._env: ThreadEnv | None = None
        self._rest: RestServer | None = None
        # instance id → application.server, newest first-hand value (see rest.host_directory)
        self.peer_hosts: dict[str, str] = {}

    # -- configuration and DSL -------------------------------------------------------------------

    def configure(self, overrides: Mapping[str, Any]) -> None:
        """Merge settings (file, env, CLI) before start; later calls win."""
        if self.config is not None:
            raise StreamrtError("configure() must be called before start()")
        self.settings.update({k: v for k, v in overrides.items() if v is not None})

    def stream(
        self, topic: str, *, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> KStream:
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
    ) -> KTable:
        """A KTable materialised from a (compacted) topic into ``store``."""
        kser, vser = serde_for(key_serde), serde_for(value_serde)
        store_name = store or f"{topic}-table"
        source = self.topology.add_source(
            self.topology.new_name("KTABLE-SOURCE"), topic, kser, vser
        )
        self.topology.add_store(StoreSpec(store_name, kser, vser))
        node = self.topology.add_processor(
            self.topology.new_name("KTABLE-MATERIALIZE"),
            lambda: ops.TableSourceProcessor(store_name),
            source,
            stores=(store_name,),
        )
        return KTable(self.topology, node, store_name, kser, vser)

    def on_event(self, callback: EventCallback) -> None:
        """``callback(event)`` for each runtime event: dict with ts, instance_id, thread,
        type and fields. Called from stream threads; must be quick and thread-safe."""
        self._callbacks.append(callback)

    def _emit(self, type_: str, thread_index: int | None, **kv: Any) -> None:
        event = {
            "ts": time.time(),
            "instance_id": self.instance_id,
            "thread": thread_index,
            "type": type_,
            "fields": kv,
        }
        for callback in list(self._callbacks):
            try:
                callback(event)
            except Exception:
                logger.exception("event callback failed", extra=fields(type=type_))

    # -- lifecycle -------------------------------------------------------------------------------

    def resolve_config(self) -> StreamsConfig:
        """Validate settings (code < env < ``configure``) and return the config."""
        known = {f.replace("_", ".") for f in StreamsConfig.__dataclass_fields__}
        env = {k: v for k, v in read_env().items() if k in known}
        # ``rest.*`` keys are streamrt's REST settings (streamrt.rest.settings), not Streams'.
        streams = {k: v for k, v in self.settings.items() if not k.startswith("rest.")}
        return StreamsConfig.from_mapping({**env, **streams})

    def start(self) -> None:
        """Validate config, create internal topics and start the stream threads."""
        with self._lock:
            if self.config is not None:
                raise StreamrtError("app already started")
            config = self.resolve_config()
            rest_settings = None
            if config.application_server is not None:
                from streamrt.rest.settings import RestSettings

                rest_settings = RestSettings.from_mapping(self.settings)
            if not self.topology.nodes:
                raise ConfigError("the topology is empty: define at least one stream")
            subs = self.topology.subtopologies(config.application_id)
            asyncio.run(
                ensure_internal_topics(
                    config.bootstrap_servers, config.application_id, self.topology, subs
                )
            )
            self.config = config
            static = config.group_instance_id is not None
            self.instance_id = config.group_instance_id or f"dyn-{uuid.uuid4().hex[:8]}"
            self._env = ThreadEnv(
                config, self.topology, tuple(subs), self.instance_id, static, self._emit
            )
            logger.info(
                "starting",
                extra=fields(
                    application_id=config.application_id,
                    instance_id=self.instance_id,
                    threads=config.num_stream_threads,
                    static=static,
                ),
            )
            if rest_settings is not None:  # first: a taken port fails before any thread runs
                from streamrt.rest.server import RestServer

                self._rest = RestServer(self, rest_settings)
                self._rest.start()
            for index in range(1, config.num_stream_threads + 1):
                self._start_thread(index)
            self._supervisor = threading.Thread(
                target=self._supervise, daemon=True, name=f"{self.instance_id}-supervisor"
            )
            self._supervisor.start()

    def _start_thread(self, index: int) -> StreamThread:
        assert self._env is not None
        thread = StreamThread(self._env, index)
        self.threads[index] = thread
        thread.start()
        return thread

    def _supervise(self) -> None:
        """Replace dead threads with the same index; stop everything on a fatal error."""
        while not self._stopping.wait(0.2):
            with self._lock:
                for index, thread in list(self.threads.items()):
                    if thread.alive or self._stopping.is_set():
                        continue
                    if isinstance(thread.error, FatalThreadError):
                        self.fatal_error = thread.error
                        logger.error(
                            "fatal error, stopping the instance",
                            extra=fields(error=str(thread.error)),
                        )
                        self._emit("fatal_error", index, error=str(thread.error))
                        threading.Thread(target=self.stop, daemon=True).start()
                        return
                    logger.warning(
                        "stream thread died, replacing it",
                        extra=fields(thread=thread.name, error=repr(thread.error)),
                    )
                    self._emit("thread_replaced", index, error=repr(thread.error))
                    self._start_thread(index)

    def add_stream_thread(self) -> int:
        """Start one more thread with the lowest free index; returns the index."""
        with self._lock:
            if self._env is None:
                raise StreamrtError("app is not started")
            index = next(i for i in range(1, len(self.threads) + 2) if i not in self.threads)
            self._start_thread(index)
            return index

    def remove_stream_thread(self, timeout: float = 30.0) -> int:
        """Stop the thread with the highest index; returns its index."""
        with self._lock:
            if not self.threads:
                raise StreamrtError("no stream thread to remove")
            index = max(self.threads)
            thread = self.threads.pop(index)
        thread.stop()
        thread.join(timeout)
        return index

    def stop(self, timeout: float = 30.0) -> None:
        """Commit and stop every thread. Static members send no LeaveGroup."""
        self._stopping.set()
        if self._rest is not None:
            self._rest.stop()
        with self._lock:
            threads = list(self.threads.values())
        for thread in threads:
            thread.stop()
        for thread in threads:
            thread.join(timeout)
        if self.fatal_error is None:
            fatal = [t.error for t in threads if isinstance(t.error, FatalThreadError)]
            self.fatal_error = fatal[0] if fatal else None

    def run(self) -> int:
        """Start, block until SIGTERM/SIGINT or a fatal error, stop; returns an exit code."""
        done = threading.Event()
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: done.set())
        try:
            self.start()
            while not done.wait(0.2):
                if self._stopping.is_set():
                    break
            self.stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.fatal_error is not None:
            raise AppError(str(self.fatal_error))
        return 0

    # -- observability ---------------------------------------------------------------------------

    def metadata_for_local_threads(self) -> list[ThreadMetadata]:
        with self._lock:
            threads = [t for _i, t in sorted(self.threads.items())]
        return [dataclasses.replace(t.metadata(), member_id=_member_id(t)) for t in threads]

    def metadata_for_all_clients(self) -> list[StreamsMetadata]:
        """Every instance of the application, from the newest assignment any thread holds."""
        with self._lock:
            infos = [t.assignment_info for t in self.threads.values() if t.assignment_info]
        if not infos:
            return []
        info = infos[-1]
        by_instance: dict[str, list[Any]] = {}
        for ct in info.cluster:
            by_instance.setdefault(ct.instance_id, []).append(ct)
        out = []
        for instance, threads in sorted(by_instance.items()):
            server = threads[0].application_server
            if instance == self.instance_id and self.config is not None:
                server = self.config.application_server
            server = self.peer_hosts.get(instance, server)
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

    def metadata_for_key(self, store: str, key: Any) -> StreamsMetadata | None:
        """The instance that owns ``key`` of ``store`` (None while no assignment is known).

        The partition is the producer's: Kafka's default partitioner, murmur2 of the key
        serialized with the store's key serde, over the store's source topic partitions.
        Raises KeyError for an unknown store and ValueError for a key the serde cannot encode.
        """
        task_id = self._task_for_key(store, key)
        for instance in self.metadata_for_all_clients():
            if task_id in instance.tasks:
                return instance
        return None

    def _task_for_key(self, store: str, key: Any) -> str:
        if self._env is None:
            raise StreamrtError("app is not started")
        spec = self.topology.stores.get(store)
        sub = next((s for s in self._env.subtopologies if store in s.stores), None)
        if spec is None or sub is None:
            raise KeyError(store)
        try:
            key_bytes = spec.key_serde.serialize(key)
        except Exception as exc:
            raise ValueError(f"store {store}: cannot serialize key {key!r}: {exc}") from exc
        if not isinstance(key_bytes, bytes):
            raise ValueError(f"store {store}: key {key!r} serializes to no bytes")
        topic = sub.source_topics[0]
        partitions = {
            p for m in self.metadata_for_all_clients() for t, p in m.topic_partitions if t == topic
        }
        if not partitions:
            raise StoreNotReadyError(f"no assignment of {topic} is known yet")
        partition = (murmur2(key_bytes) & 0x7FFFFFFF) % (max(partitions) + 1)
        return f"{sub.id}_{partition}"

    def query_local(self, store: str, key: Any, timeout: float = 10.0) -> Any:
        """Read ``key`` from ``store`` on the local thread that owns its task.

        The read runs on that stream thread's event loop under its commit lock, so it never
        races a task being closed or restored. Raises KeyError (unknown store), ValueError
        (bad key), StoreNotReadyError (the task is not open and running here).
        """
        task_id = self._task_for_key(store, key)
        with self._lock:
            owner = next((t for t in self.threads.values() if task_id in t.tasks), None)
        loop = getattr(owner, "_loop", None)
        if owner is None or loop is None:
            raise StoreNotReadyError(f"task {task_id} of store {store} is not active here")

        async def read() -> Any:
            lock = owner._commit_lock
            assert lock is not None
            async with lock:
                task = owner.tasks.get(task_id)
                if task is None or task_id in owner.restoring or task_id in owner.locked:
                    raise StoreNotReadyError(f"task {task_id} is not running here")
                return task.stores[store].get(key)

        try:
            return asyncio.run_coroutine_threadsafe(read(), loop).result(timeout)
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            raise StoreNotReadyError(f"task {task_id} did not answer: {exc!r}") from exc

    def remove_members(self, instance_ids: Sequence[str]) -> dict[str, KafkaError | None]:
        """Remove static members now (one batch LeaveGroup, KIP-345) instead of waiting for
        ``session.timeout.ms``. An instance id expands to its threads' ``group.instance.id``s
        (as the coordinator lists them); the result maps each id sent to None or its error."""
        if self.config is None:
            raise StreamrtError("app is not started")
        from streamrt.admin import AdminClient

        group = self.config.application_id

        async def go() -> dict[str, KafkaError | None]:
            async with AdminClient(self.config.bootstrap_servers) as admin:  # type: ignore[union-attr]
                described = (await admin.describe_groups([group]))[group]
                members = [m.group_instance_id for m in described.members if m.group_instance_id]
                return await admin.remove_members(group, expand_instance_ids(instance_ids, members))

        return asyncio.run(go())


def expand_instance_ids(requested: Sequence[str], members: Sequence[str]) -> list[str]:
    """An instance id ``web-3`` → its members ``web-3-thread-N``; other ids stay as they are.
    Each id appears once, so nothing is removed twice."""
    out: list[str] = []
    for wanted in requested:
        threads = [m for m in members if m.startswith(f"{wanted}-thread-")]
        out.extend(threads if threads and wanted not in members else [wanted])
    return list(dict.fromkeys(out))


def _member_id(thread: StreamThread) -> str | None:
    """The consumer's current member id (assigned by the coordinator), if it has one."""
    coordinator = getattr(getattr(thread, "_consumer", None), "_coordinator", None)
    member = getattr(coordinator, "member_id", None)
    return str(member) if member else None
