"""App: one instance of a streams application — its lifecycle and overall state.

The app resolves the config, creates internal topics, runs ``num.stream.threads`` stream
threads (in this process or one child process each: :mod:`.threads`) under a
:class:`~.supervisor.Supervisor` that replaces dead ones, stops the instance on fatal errors
such as FENCED_INSTANCE_ID, and reports an overall :class:`AppState` to a state listener, as
Kafka Streams' ``KafkaStreams``. The DSL lives in :class:`StreamsBuilder` and the
metadata/query facade in :class:`StreamsQueries`; the app forwards to both (:mod:`.forward`)
so ``app.stream(...)`` and ``app.metadata_for_key(...)`` keep working. Services such as the
REST endpoint are attached from outside (``add_service``): the runtime does not know REST.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from streamrt.clock import Clock, SystemClock
from streamrt.errors import ConfigError, StreamrtError
from streamrt.logs import fields, log_format
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.dsl import StreamsBuilder
from streamrt.runtime.engine.thread.global_thread import GlobalStreamThread
from streamrt.runtime.engine.thread.thread import FatalThreadError, ThreadEnv
from streamrt.runtime.env_config import read_env
from streamrt.runtime.exception_handlers import ErrorStats
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.instance import handover
from streamrt.runtime.instance.forward import Forward
from streamrt.runtime.instance.health import Health, health_of
from streamrt.runtime.instance.internal_topics import ensure_internal_topics_for
from streamrt.runtime.instance.membership import leave_group
from streamrt.runtime.instance.metadata import AppState
from streamrt.runtime.instance.process_thread import (
    PROCESS_MODE,
    ChildLaunch,
    picklable_settings,
    require_app_spec,
)
from streamrt.runtime.instance.queries import StoreNotReadyError, StreamsQueries
from streamrt.runtime.instance.services import Service, Services
from streamrt.runtime.instance.signals import on_stop_signals
from streamrt.runtime.instance.state import AppStateMachine, StateListener
from streamrt.runtime.instance.store_reads import StoreRead
from streamrt.runtime.instance.supervisor import RestartBackoff, Supervisor, SupervisorHooks
from streamrt.runtime.instance.thread_handle import ThreadHandle
from streamrt.runtime.instance.threads import ChildThreads, LocalThreads, Threads

__all__ = ("App", "AppError", "Health", "Service", "StateListener", "StoreNotReadyError")

logger = logging.getLogger(__name__)

EventCallback = Callable[[dict[str, Any]], None]


class AppError(StreamrtError):
    """The instance stopped because of a fatal error (its message says which)."""


class App:
    """A Kafka Streams-style application. Configure with Kafka Streams' names::

    app = App({"application.id": "wordcount", "bootstrap.servers": "localhost:9092"})
    app.stream("text", value_serde="str").flat_map(...).group_by_key().count(store="counts")
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        builder: StreamsBuilder | None = None,
        clock: Clock | None = None,
        **kwargs: Any,
    ) -> None:
        self.settings: dict[str, Any] = dict(config or {})
        self.settings.update({k.replace("_", "."): v for k, v in kwargs.items()})
        self.builder = builder or StreamsBuilder()
        self.clock: Clock = clock or SystemClock()
        self.config: StreamsConfig | None = None
        self.instance_id = ""
        # MODULE:ATTR a child process imports in stream.thread.mode=process (``streamrt run``
        # sets it; otherwise found among the loaded modules at start)
        self.app_spec: str | None = None
        self.fatal_error: BaseException | None = None
        self.queries = StreamsQueries(self.topology, self._thread_list, self._read_store)
        self.error_stats = ErrorStats()
        self._states = AppStateMachine(self._emit)
        self._callbacks: list[EventCallback] = []
        self._services = Services()
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._supervisor: Supervisor | None = None  # set once started
        self._threads: Threads | None = None  # set up with the config
        self._global_thread: GlobalStreamThread | None = None
        self._prepared: StreamsConfig | None = None
        self._handed_over: dict[int, list[str]] = {}  # a successor: each old thread's tasks

    @property
    def topology(self) -> Topology:
        return self.builder.topology

    @property
    def threads(self) -> Mapping[int, ThreadHandle]:
        """The stream threads by index (``n`` of ``<instance id>-thread-<n>``)."""
        return self._threads.by_index if self._threads is not None else {}

    @property
    def thread_failures(self) -> int:
        """Stream thread deaths (not counting clean stops)."""
        return self._supervisor.deaths if self._supervisor is not None else 0

    # -- configuration and DSL (StreamsBuilder's methods) ---------------------------------

    def configure(self, overrides: Mapping[str, Any]) -> None:
        """Merge settings (file, env, CLI) before start; later calls win."""
        if self.config is not None:
            raise StreamrtError("configure() must be called before start()")
        self.settings.update({k: v for k, v in overrides.items() if v is not None})

    stream = Forward("builder", StreamsBuilder.stream)
    table = Forward("builder", StreamsBuilder.table)
    global_table = Forward("builder", StreamsBuilder.global_table)
    add_state_store = Forward("builder", StreamsBuilder.add_state_store)

    # -- events, services and the state listener -------------------------------------------

    def on_event(self, callback: EventCallback) -> None:
        """``callback(event)`` for each runtime event: dict with ts, instance_id, thread,
        type and fields. Called from stream threads; must be quick and thread-safe."""
        self._callbacks.append(callback)

    def add_service(self, service: Service) -> None:
        """Run ``service`` for as long as the app runs (see :class:`Service`)."""
        if self._supervisor is not None:  # started (a prestarted app still takes services)
            raise StreamrtError("add_service() must be called before start()")
        self._services.add(service)

    def set_state_listener(self, listener: StateListener) -> None:
        """``listener(new, old)`` on each change of :attr:`state`; from any thread, quick."""
        self._states.add_listener(listener)

    @property
    def state(self) -> AppState:
        return self._states.state

    def _set_state(self, new: AppState) -> bool:
        return self._states.move(new)

    def _on_thread_state(self) -> None:
        self._states.follow_threads([t.state for t in self._thread_list()])

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
        if type_ == "thread_state":
            self._on_thread_state()

    def _thread_list(self) -> list[ThreadHandle]:
        with self._lock:
            return [t for _i, t in sorted(self.threads.items())]

    def _read_store(self, task_id: str, read: StoreRead, timeout: float) -> Any:
        """Run an interactive-query read on the local thread owning ``task_id``."""
        if self._threads is None:
            raise StoreNotReadyError(f"task {task_id} of store {read.store} is not active here")
        return self._threads.read_store(task_id, read, timeout)

    # -- lifecycle -------------------------------------------------------------------------

    def resolve_config(self) -> StreamsConfig:
        """Validate settings (code < env < ``configure``) and return the config."""
        known = {f.replace("_", ".") for f in StreamsConfig.__dataclass_fields__}
        env = {k: v for k, v in read_env(warn=False).items() if k in known}
        # ``rest.*`` keys belong to the REST service attached by ``streamrt run``, not Streams.
        streams = {k: v for k, v in self.settings.items() if not k.startswith("rest.")}
        return StreamsConfig.from_mapping({**env, **streams})

    def prepare(self) -> StreamsConfig:
        """The slow part of a start, without joining: validate config and topology, connect to
        the broker and create internal topics. A hand-off successor calls it while the old
        process still processes; :meth:`start` then skips it."""
        with self._lock:
            if self._prepared is not None:
                return self._prepared
            config = self.resolve_config()
            if not self.topology.nodes:
                raise ConfigError("the topology is empty: define at least one stream")
            asyncio.run(ensure_internal_topics_for(config, self.topology))
            self._prepared = config
            return config

    def prestart(self, timeout: float = 60.0) -> None:
        """A hand-off successor's early start: :meth:`prepare`, then every stream thread starts
        its clients and finds the group coordinator, and waits. :meth:`start` lets them join.

        What is left for the moment the previous process has released the state: the join
        (same instance ids: same partitions, no rebalance), opening the stores, the first fetch.
        Services (the REST port the previous process still holds) start in :meth:`start`.
        Returns when every thread waits (or ``timeout``: the rest is then done after the join).
        """
        with self._lock:
            if self.config is not None:
                raise StreamrtError("app already started")
            threads = self._setup()
            started = [
                threads.start_thread(index, hold=True)
                for index in range(1, self._config().num_stream_threads + 1)
            ]
        deadline = time.monotonic() + timeout
        for thread in started:
            thread.wait_ready(max(0.0, deadline - time.monotonic()))

    def took_over(self, thread_tasks: Mapping[str, Any]) -> None:
        """After a hand-off (before :meth:`start`): the tasks each of the old process's
        threads owned (its ``released`` summary), opened by our same-index thread while it
        joins."""
        self._handed_over = {int(i): [str(t) for t in ts] for i, ts in thread_tasks.items()}

    def _config(self) -> StreamsConfig:
        if self.config is None:
            raise StreamrtError("app is not started")
        return self.config

    def _setup(self) -> Threads:
        """Resolve the config, create the internal topics and the (empty) set of threads."""
        if self.resolve_config().stream_thread_mode == PROCESS_MODE:
            require_app_spec(self, self.app_spec)  # before connecting: a child must import us
        config = self.prepare()
        subs = self.topology.subtopologies(config.application_id)
        self.config = config
        static = config.group_instance_id is not None
        self.instance_id = config.group_instance_id or f"dyn-{uuid.uuid4().hex[:8]}"
        errors = config.error_handlers()
        threads: Threads
        if config.stream_thread_mode == PROCESS_MODE:
            threads = ChildThreads(self._child_launch(config, static))
        else:
            env = ThreadEnv(
                config,
                self.topology,
                tuple(subs),
                self.instance_id,
                static,
                self._emit,
                self.clock,
                errors,
            )
            threads = LocalThreads(env)
        self._threads = threads
        self.error_stats = threads.error_stats(errors.stats)
        self.queries.bind(config, self.instance_id, subs)
        return threads

    def start(self) -> None:
        """Validate config, create internal topics, start services and the stream threads
        (or, after :meth:`prestart`, let the waiting ones join)."""
        with self._lock:
            held = self._threads is not None and self._supervisor is None
            if self.config is not None and not held:
                raise StreamrtError("app already started")
            threads = self._threads if held and self._threads is not None else self._setup()
            config = self._config()
            self._log_start(config)
            try:
                self._services.start_all()  # first: a taken port fails before any join
                self._start_global_thread(config)
            except BaseException:
                for thread in self._thread_list():  # held threads: never joined, just close
                    thread.stop()
                raise
            self._set_state(AppState.REBALANCING)
            for index in range(1, config.num_stream_threads + 1):
                waiting = threads.by_index.get(index)
                if waiting is None or not waiting.alive:
                    # not held, or a held one died while waiting (e.g. the broker went away);
                    # processes are held so that those of one start join together
                    threads.start_thread(index, hold=threads.joins_together)
            self._release_held(threads)
            self._supervisor = self._new_supervisor(config, threads)
            self._supervisor.start()

    def _log_start(self, config: StreamsConfig) -> None:
        logger.info(
            "starting",
            extra=fields(
                application_id=config.application_id,
                instance_id=self.instance_id,
                threads=config.num_stream_threads,
                mode=config.stream_thread_mode,
                static=config.group_instance_id is not None,
                config=config.redacted(),
            ),
        )

    def _new_supervisor(self, config: StreamsConfig, threads: Threads) -> Supervisor:
        hooks = SupervisorHooks(
            threads=lambda: threads.by_index,
            restart=lambda index: threads.start_thread(index, hold=False),
            give_up=self._to_error,
            emit=self._emit,
        )
        return Supervisor(
            RestartBackoff.from_config(config),
            hooks,
            self._lock,
            self._stopping,
            name=f"{self.instance_id}-supervisor",
        )

    def _start_global_thread(self, config: StreamsConfig) -> None:
        """Global tables load fully (to the topics' end offsets) before any stream thread."""
        specs = list(self.topology.global_tables.values())
        if not specs:
            return
        self._global_thread = GlobalStreamThread(
            config, f"{config.application_id}-{self.instance_id}", specs
        )
        try:
            self._global_thread.start()
        except BaseException:
            self._services.stop_all()
            raise

    def _child_launch(self, config: StreamsConfig, static: bool) -> ChildLaunch:
        """What each stream thread process starts from: this app, imported by name."""
        return ChildLaunch(
            app_spec=require_app_spec(self, self.app_spec),
            settings=picklable_settings(self.settings),
            application_id=config.application_id,
            instance_id=self.instance_id,
            static=static,
            emit=self._emit,
            log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel()),
            log_format=log_format(),
        )

    def _release_held(self, threads: Threads, timeout: float = 60.0) -> None:
        """Let held threads join. Stream thread processes of one start join the group together
        (one rebalance, as threads): wait until each has imported the app, then release all.
        Held threads of a hand-off successor were waited for in :meth:`prestart`."""
        held = list(threads.by_index.values())
        deadline = time.monotonic() + timeout
        if threads.joins_together:
            for thread in held:
                thread.wait_ready(max(0.0, deadline - time.monotonic()))
        for thread in held:
            thread.expect_tasks(self._handed_over.get(thread.index, ()))
            thread.release()

    def _to_error(self, index: int, error: BaseException | None, reason: str) -> None:
        """Stop the whole instance into ERROR (Kafka Streams' SHUTDOWN_CLIENT)."""
        self.fatal_error = AppError(reason) if error is None or reason != str(error) else error
        logger.error("fatal error, stopping the instance", extra=fields(error=reason))
        self._emit("fatal_error", index, error=reason)
        self._set_state(AppState.PENDING_ERROR)
        threading.Thread(target=self._close_to_error, daemon=True).start()

    def _close_to_error(self, timeout: float = 30.0) -> None:
        """Stop every stream thread and end in ERROR. Services (the REST endpoint) keep
        running until :meth:`stop`, so ``/healthz`` can say 503 and why."""
        self._stopping.set()
        self._stop_threads(self._thread_list(), timeout)
        self._set_state(AppState.ERROR)

    @staticmethod
    def _stop_threads(threads: list[ThreadHandle], timeout: float) -> None:
        for thread in threads:
            thread.stop()
        for thread in threads:
            thread.join(timeout)

    def add_stream_thread(self) -> int:
        """Start one more thread with the lowest free index; returns the index."""
        with self._lock:
            if self._threads is None:
                raise StreamrtError("app is not started")
            taken = self._threads.by_index
            index = next(i for i in range(1, len(taken) + 2) if i not in taken)
            self._threads.start_thread(index, hold=False)
            return index

    def remove_stream_thread(self, timeout: float = 30.0) -> int:
        """Stop the thread with the highest index; returns its index."""
        with self._lock:
            if self._threads is None or not self._threads.by_index:
                raise StreamrtError("no stream thread to remove")
            index = max(self._threads.by_index)
            thread = self._threads.remove(index)
            if self._supervisor is not None:
                self._supervisor.forget(index)
        thread.stop()
        thread.join(timeout)
        if thread.thread_instance_id is not None:
            leave_group(self.queries, thread.thread_instance_id, self._emit)
        self._on_thread_state()
        return index

    def stop(self, timeout: float = 30.0) -> None:
        """Commit and stop every thread and service. Static members send no LeaveGroup.
        After an error, the state stays ERROR."""
        self._stopping.set()
        self._set_state(AppState.PENDING_SHUTDOWN)
        self._services.stop_all()
        threads = self._thread_list()
        self._stop_threads(threads, timeout)
        if self._global_thread is not None:
            self._global_thread.stop(timeout)
        if self.fatal_error is None:
            fatal = [t.error for t in threads if isinstance(t.error, FatalThreadError)]
            self.fatal_error = fatal[0] if fatal else None
        if self.fatal_error is not None:
            self._set_state(AppState.PENDING_ERROR)
        self._set_state(AppState.ERROR if self.fatal_error is not None else AppState.NOT_RUNNING)

    def run(self) -> int:
        """Start, block until SIGTERM/SIGINT or a fatal error, stop; returns an exit code."""
        done = threading.Event()
        with on_stop_signals(done.set):
            self.start()
            while not done.wait(0.2):
                if self._stopping.is_set():
                    break
            self.stop()
        if self.fatal_error is not None:
            raise AppError(str(self.fatal_error))
        return 0

    def health(self) -> Health:
        """Healthy unless the instance is in (or on its way to) ERROR; the reason says why."""
        return health_of(self.state, self.fatal_error, self._thread_list(), self.thread_failures)

    # -- hand-off (streamrt run --handoff; the protocol is in .handoff) -------------------

    def mark(self, name: str) -> None:
        """A hand-off timeline mark of the whole instance (``timeline`` event, thread None)."""
        logger.info("timeline", extra=fields(mark=name, t=round(time.time(), 4)))
        self._emit("timeline", None, mark=name)

    def prepare_for_handoff(self) -> dict[str, Any]:
        """A successor is starting up: write the stores' memory to disk now, in the background,
        so the stop that follows closes them quickly (the partitions wait for that close)."""
        asked = handover.persist_stores(self._thread_list())
        self._emit("handoff_preparing", None, tasks=asked)
        return {"tasks": asked}

    def stop_for_handoff(self, timeout: float = 30.0) -> dict[str, Any]:
        """Stop so another process of this instance takes over (``streamrt run --handoff``).

        Each thread is woken, stops processing and commits (producer flushed, data + changelog
        offsets written, input offsets committed); this returns as soon as every thread has
        done so. The threads then close their stores (each release of a task's directory lock
        lets the successor open that task) and their clients, while the successor joins: it
        fences our members, which commit nothing more (a static member sends no LeaveGroup).
        Call :meth:`stop` afterwards to wait for the threads. Refuses a dynamic member (its
        stop would rebalance) and raises if a thread failed to commit, so the caller can tell
        the successor the state is not clean. Returns what was handed over.
        """
        if self.config is None or self.config.group_instance_id is None:
            raise StreamrtError("a hand-off needs static membership (group.instance.id)")
        if self.config.stream_thread_mode == PROCESS_MODE:
            # the children would need the commit/close handshake relayed; a plain restart
            # (static membership: no rebalance) is what the successor falls back to
            raise StreamrtError("a hand-off is not supported with stream.thread.mode=process")
        threads = self._thread_list()
        tasks = sorted(t for thread in threads for t in thread.tasks)
        by_thread = {str(thread.index): sorted(thread.tasks) for thread in threads}
        self._emit("handoff_stopping", None, tasks=tasks)
        self._stopping.set()
        for thread in threads:  # first: processing stops now, services stop meanwhile
            thread.stop()
        self._set_state(AppState.PENDING_SHUTDOWN)
        self._services.stop_all()  # the successor binds the same port
        handover.wait_final_commits(threads, timeout, lambda: self.fatal_error)
        self._emit("handoff_released", None, tasks=tasks)
        return {"threads": len(threads), "tasks": tasks, "thread_tasks": by_thread}

    # -- metadata and queries (StreamsQueries' methods) ------------------------------------

    metadata_for_local_threads = Forward("queries", StreamsQueries.metadata_for_local_threads)
    metadata_for_all_clients = Forward("queries", StreamsQueries.metadata_for_all_clients)
    metadata_for_key = Forward("queries", StreamsQueries.metadata_for_key)
    query_local = Forward("queries", StreamsQueries.query_local)
    query_window = Forward("queries", StreamsQueries.query_window)
    remove_members = Forward("queries", StreamsQueries.remove_members)
