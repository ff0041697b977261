"""App: one instance of a streams application — lifecycle, supervision and overall state.

The app resolves the config, creates internal topics, runs ``num.stream.threads`` stream
threads and replaces a dead one with the same index (so its static member id is kept), stops
the instance on fatal errors such as FENCED_INSTANCE_ID, and reports an overall
:class:`AppState` to a state listener, as Kafka Streams' ``KafkaStreams``. The DSL lives in
:class:`StreamsBuilder` and the metadata/query facade in :class:`StreamsQueries`; the app
delegates to both so ``app.stream(...)`` and ``app.metadata_for_key(...)`` keep working.
Services such as the REST endpoint are attached from outside (``add_service``): the runtime
does not know the REST layer.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streamrt.clock import Clock, SystemClock
from streamrt.errors import ConfigError, KafkaError, StreamrtError
from streamrt.logs import fields, log_format
from streamrt.runtime.client_settings import admin_kwargs
from streamrt.runtime.config import StreamsConfig, read_env
from streamrt.runtime.dsl import GlobalKTable, KStream, KTable, StreamsBuilder
from streamrt.runtime.exception_handlers import ErrorStats, RecordFailedError
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.internal_topics import ensure_internal_topics
from streamrt.runtime.metadata import (
    APP_ALLOWED_NEXT,
    AppState,
    StreamsMetadata,
    ThreadMetadata,
    ThreadState,
)
from streamrt.runtime.process_thread import (
    PROCESS_MODE,
    ChildLaunch,
    ChildrenErrorStats,
    ChildThreadError,
    ProcessStreamThread,
    find_app_spec,
    picklable_settings,
)
from streamrt.runtime.processors.global_thread import GlobalStreamThread
from streamrt.runtime.queries import StoreNotReadyError, StreamsQueries
from streamrt.runtime.thread import (
    FatalThreadError,
    StreamThread,
    ThreadEnv,
    ThreadNotRunningError,
)
from streamrt.runtime.timestamps import TimestampExtractor
from streamrt.serde import SerdeLike

__all__ = ("App", "AppError", "Health", "Service", "StateListener", "StoreNotReadyError")

logger = logging.getLogger(__name__)

EventCallback = Callable[[dict[str, Any]], None]
AnyThread = StreamThread | ProcessStreamThread
StateListener = Callable[[AppState, AppState], None]  # (new, old), as Kafka's StateListener


class AppError(StreamrtError):
    """The instance stopped because of a fatal error (its message says which)."""


@dataclass(frozen=True, slots=True)
class Health:
    """What ``/healthz`` reports: unhealthy once the instance is in (or going to) ERROR."""

    healthy: bool
    state: str
    reason: str | None
    threads: dict[str, str]
    thread_failures: int


@dataclass(slots=True)
class _Failures:
    """Deaths of stream threads on one record (or with one error), for the backoff."""

    count: int
    last: float


class Service(Protocol):
    """Something that lives as long as the started app (e.g. the REST endpoint).

    ``start`` runs after the config is resolved and before any stream thread, so a failure
    (a taken port) stops the start; ``stop`` runs first when the app stops.
    """

    def start(self) -> None: ...

    def stop(self) -> None: ...


class App:
    """A Kafka Streams-style application. Configure with Kafka Streams' names::

    app = App({"application.id": "wordcount", "bootstrap.servers": "localhost:9092"})
    app.stream("text", value_serde="str").flat_map(...).group_by_key().count("counts")
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
        self.threads: dict[int, AnyThread] = {}
        # MODULE:ATTR a child process imports in stream.thread.mode=process (``streamrt run``
        # sets it; otherwise found among the loaded modules at start)
        self.app_spec: str | None = None
        self.fatal_error: BaseException | None = None
        self.queries = StreamsQueries(self.topology, self._thread_list)
        self._state = AppState.CREATED
        self._state_lock = threading.Lock()
        self._state_listeners: list[StateListener] = []
        self._callbacks: list[EventCallback] = []
        self._services: list[Service] = []
        self._started_services: list[Service] = []
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._env: ThreadEnv | None = None
        self._launch: ChildLaunch | None = None
        self._global_thread: GlobalStreamThread | None = None
        self.error_stats = ErrorStats()
        self.thread_failures = 0  # stream thread deaths (not counting clean stops)
        self._failures: dict[str, _Failures] = {}
        self._restart_at: dict[int, float] = {}  # dead thread index → when to replace it
        self._prepared: StreamsConfig | None = None

    @property
    def topology(self) -> Topology:
        return self.builder.topology

    # -- configuration and DSL -------------------------------------------------------------

    def configure(self, overrides: Mapping[str, Any]) -> None:
        """Merge settings (file, env, CLI) before start; later calls win."""
        if self.config is not None:
            raise StreamrtError("configure() must be called before start()")
        self.settings.update({k: v for k, v in overrides.items() if v is not None})

    def stream(
        self,
        topic: str,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> KStream:
        """``builder.stream``: a KStream reading ``topic``."""
        return self.builder.stream(
            topic,
            key_serde=key_serde,
            value_serde=value_serde,
            timestamp_extractor=timestamp_extractor,
        )

    def global_table(
        self,
        topic: str,
        *,
        store: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> GlobalKTable:
        """``builder.global_table``: every partition of ``topic`` on every instance."""
        return self.builder.global_table(
            topic, store=store, key_serde=key_serde, value_serde=value_serde
        )

    def table(
        self,
        topic: str,
        *,
        store: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        in_memory: bool | None = None,
    ) -> KTable:
        """``builder.table``: a KTable materialised from a (compacted) topic into ``store``."""
        return self.builder.table(
            topic, store=store, key_serde=key_serde, value_serde=value_serde, in_memory=in_memory
        )

    # -- events, services and the state listener -------------------------------------------

    def on_event(self, callback: EventCallback) -> None:
        """``callback(event)`` for each runtime event: dict with ts, instance_id, thread,
        type and fields. Called from stream threads; must be quick and thread-safe."""
        self._callbacks.append(callback)

    def add_service(self, service: Service) -> None:
        """Run ``service`` for as long as the app runs (see :class:`Service`)."""
        if self._supervisor is not None:  # started (a prestarted app still takes services)
            raise StreamrtError("add_service() must be called before start()")
        self._services.append(service)

    def set_state_listener(self, listener: StateListener) -> None:
        """``listener(new, old)`` on each change of :attr:`state`; from any thread, quick."""
        self._state_listeners.append(listener)

    @property
    def state(self) -> AppState:
        return self._state

    def _set_state(self, new: AppState) -> bool:
        with self._state_lock:
            old = self._state
            if old is new or new not in APP_ALLOWED_NEXT[old]:
                return False
            self._state = new
        logger.info("instance state", extra=fields(old=old.name, new=new.name))
        self._emit("app_state", None, old=old.name, new=new.name)
        for listener in list(self._state_listeners):
            try:
                listener(new, old)
            except Exception:
                logger.exception("state listener failed")
        return True

    def _on_thread_state(self) -> None:
        """RUNNING when every thread runs, REBALANCING otherwise (while running at all)."""
        if not self._state.is_running_or_rebalancing:
            return
        threads = self._thread_list()
        running = bool(threads) and all(t.state is ThreadState.RUNNING for t in threads)
        self._set_state(AppState.RUNNING if running else AppState.REBALANCING)

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

    def _thread_list(self) -> list[AnyThread]:
        with self._lock:
            return [t for _i, t in sorted(self.threads.items())]

    # -- lifecycle -------------------------------------------------------------------------

    def resolve_config(self) -> StreamsConfig:
        """Validate settings (code < env < ``configure``) and return the config."""
        known = {f.replace("_", ".") for f in StreamsConfig.__dataclass_fields__}
        env = {k: v for k, v in read_env().items() if k in known}
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
            subs = self.topology.subtopologies(config.application_id)
            asyncio.run(
                ensure_internal_topics(
                    config.bootstrap_servers,
                    config.application_id,
                    self.topology,
                    subs,
                    admin_kwargs=admin_kwargs(
                        config.client_config(), f"{config.application_id}-admin"
                    ),
                    window_additional_retention_ms=(
                        config.windowstore_changelog_additional_retention_ms
                    ),
                    replication_factor=config.replication_factor,
                )
            )
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
            config = self._setup()
            threads = [
                self._start_thread(index, hold=True)
                for index in range(1, config.num_stream_threads + 1)
            ]
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.wait_ready(max(0.0, deadline - time.monotonic()))

    def _setup(self) -> StreamsConfig:
        if self.resolve_config().stream_thread_mode == PROCESS_MODE:
            self._require_app_spec()  # before connecting: a child could not import us
        config = self.prepare()
        subs = self.topology.subtopologies(config.application_id)
        self.config = config
        static = config.group_instance_id is not None
        self.instance_id = config.group_instance_id or f"dyn-{uuid.uuid4().hex[:8]}"
        errors = config.error_handlers()
        self.error_stats = errors.stats
        self._env = ThreadEnv(
            config,
            self.topology,
            tuple(subs),
            self.instance_id,
            static,
            self._emit,
            self.clock,
            errors,
        )
        if config.stream_thread_mode == PROCESS_MODE:
            self._launch = self._child_launch(config, static)
            self.error_stats = ChildrenErrorStats(self._thread_list)
        self.queries.bind(config, self.instance_id, subs)
        return config

    def start(self) -> None:
        """Validate config, create internal topics, start services and the stream threads
        (or, after :meth:`prestart`, let the waiting ones join)."""
        with self._lock:
            held = self._env is not None and self._supervisor is None
            if self.config is not None and not held:
                raise StreamrtError("app already started")
            config = self.config if held and self.config is not None else self._setup()
            static = config.group_instance_id is not None
            logger.info(
                "starting",
                extra=fields(
                    application_id=config.application_id,
                    instance_id=self.instance_id,
                    threads=config.num_stream_threads,
                    mode=config.stream_thread_mode,
                    static=static,
                    config=config.redacted(),
                ),
            )
            try:
                for service in self._services:  # first: a taken port fails before any join
                    service.start()
                    self._started_services.append(service)
                self._start_global_thread(config)
            except BaseException:
                for thread in self._thread_list():  # held threads: never joined, just close
                    thread.stop()
                raise
            self._set_state(AppState.REBALANCING)
            for index in range(1, config.num_stream_threads + 1):
                waiting = self.threads.get(index)
                if waiting is None or not waiting.alive:
                    # not held, or a held one died while waiting (e.g. the broker went away);
                    # processes are held so that those of one start join together
                    self._start_thread(index, hold=self._launch is not None)
            self._release_held()
            self._supervisor = threading.Thread(
                target=self._supervise, daemon=True, name=f"{self.instance_id}-supervisor"
            )
            self._supervisor.start()

    def _start_global_thread(self, config: StreamsConfig) -> None:
        """Global tables load fully (to the topics' end offsets) before any stream thread."""
        specs = list(self.topology.global_tables.values())
        if not specs:
            return
        self._global_thread = GlobalStreamThread(
            config.bootstrap_servers, f"{config.application_id}-{self.instance_id}", specs
        )
        try:
            self._global_thread.start()
        except BaseException:
            for service in reversed(self._started_services):
                service.stop()
            self._started_services.clear()
            raise

    def _require_app_spec(self) -> str:
        """MODULE:ATTR a stream thread process imports to get this app's topology."""
        spec = self.app_spec or find_app_spec(self)
        if spec is None:
            raise ConfigError(
                "stream.thread.mode=process: each stream thread process imports the app, but "
                "this App is not a module-level variable of an importable module; run it with "
                "`streamrt run MODULE:ATTR` or set app.app_spec = 'MODULE:ATTR'"
            )
        return spec

    def _child_launch(self, config: StreamsConfig, static: bool) -> ChildLaunch:
        """What each stream thread process starts from: this app, imported by name."""
        return ChildLaunch(
            app_spec=self._require_app_spec(),
            settings=picklable_settings(self.settings),
            application_id=config.application_id,
            instance_id=self.instance_id,
            static=static,
            emit=self._emit,
            log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel()),
            log_format=log_format(),
        )

    def _start_thread(self, index: int, hold: bool = False) -> AnyThread:
        assert self._env is not None
        thread: AnyThread
        if self._launch is not None:
            thread = ProcessStreamThread(self._launch, index)
            self.threads[index] = thread
            thread.start(hold=hold)
        else:
            thread = StreamThread(self._env, index, held=hold)
            self.threads[index] = thread
            thread.start()
        return thread

    def _release_held(self, timeout: float = 60.0) -> None:
        """Let held threads join. Stream thread processes of one start join the group together
        (one rebalance, as threads): wait until each has imported the app, then release all.
        Held threads of a hand-off successor were waited for in :meth:`prestart`."""
        threads = list(self.threads.values())
        deadline = time.monotonic() + timeout
        for thread in threads:
            if isinstance(thread, ProcessStreamThread):
                thread.wait_ready(max(0.0, deadline - time.monotonic()))
        for thread in threads:
            thread.release()

    def _supervise(self) -> None:
        """Replace dead threads with the same index, after a backoff that grows while they
        keep dying on the same record (or with the same error); give up to ERROR after
        ``errors.retry.max.attempts`` replacements, and at once on a fatal error."""
        while not self._stopping.wait(0.2):
            with self._lock:
                for index, thread in list(self.threads.items()):
                    if thread.alive or self._stopping.is_set():
                        continue
                    if isinstance(thread.error, FatalThreadError):
                        self._to_error(index, thread.error, str(thread.error))
                        return
                    if index not in self._restart_at:
                        reason = self._thread_failed(index, thread)
                        if reason is not None:
                            self._to_error(index, thread.error, reason)
                            return
                    if time.monotonic() >= self._restart_at[index]:
                        del self._restart_at[index]
                        self._emit("thread_replaced", index, error=repr(thread.error))
                        self._start_thread(index)

    def _thread_failed(self, index: int, thread: AnyThread) -> str | None:
        """Count a thread death and schedule its replacement; the reason to give up, if so."""
        assert self.config is not None
        cfg = self.config
        error = thread.error
        self.thread_failures += 1
        if isinstance(error, ChildThreadError):  # a stream thread process: keyed by the child
            key = error.key
        elif isinstance(error, RecordFailedError):
            key = f"record {error.context.record_id}"
        else:
            key = f"error {type(error).__name__}: {error}"
        now = time.monotonic()
        previous = self._failures.get(key)
        # a failure long after the last one with the same key starts a new series
        if previous is None or now - previous.last > 4 * cfg.errors_retry_backoff_max_ms / 1000:
            previous = _Failures(0, now)
        failures = _Failures(previous.count + 1, now)
        self._failures[key] = failures
        attempts = failures.count - 1  # replacements already made for this key
        if attempts >= cfg.errors_retry_max_attempts:
            self._emit(
                "thread_failed",
                index,
                error=str(error),
                key=key,
                attempt=failures.count,
                retry_in_ms=None,
            )
            return (
                f"stream thread {index} failed {failures.count} times on {key}; giving up "
                f"(errors.retry.max.attempts={cfg.errors_retry_max_attempts}): {error}"
            )
        delay_ms = min(cfg.errors_retry_backoff_ms * 2**attempts, cfg.errors_retry_backoff_max_ms)
        self._restart_at[index] = now + delay_ms / 1000
        logger.warning(
            "stream thread died, replacing it after a backoff",
            extra=fields(
                thread=thread.name, error=repr(error), attempt=failures.count, retry_in_ms=delay_ms
            ),
        )
        self._emit(
            "thread_failed",
            index,
            error=str(error),
            key=key,
            attempt=failures.count,
            retry_in_ms=delay_ms,
        )
        return None

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
        threads = self._thread_list()
        for thread in threads:
            thread.stop()
        for thread in threads:
            thread.join(timeout)
        self._set_state(AppState.ERROR)

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
            self._restart_at.pop(index, None)
        thread.stop()
        thread.join(timeout)
        if thread.thread_instance_id is not None:
            self._leave_group(thread.thread_instance_id)
        self._on_thread_state()
        return index

    def _leave_group(self, thread_instance_id: str) -> None:
        """A static member sends no LeaveGroup on stop; remove it by its instance id (batch
        LeaveGroup) so its partitions move now, not after ``session.timeout.ms``."""
        try:
            results = self.queries.remove_members([thread_instance_id])
        except Exception as exc:  # the group still drops it after session.timeout.ms
            logger.warning(
                "could not remove the stopped thread's static member",
                extra=fields(member=thread_instance_id, error=repr(exc)),
            )
            return
        error = results.get(thread_instance_id)
        logger.info(
            "removed the stopped thread's static member from the group",
            extra=fields(member=thread_instance_id, error=str(error) if error else None),
        )
        self._emit("member_removed", None, member=thread_instance_id, error=error and str(error))

    def stop(self, timeout: float = 30.0) -> None:
        """Commit and stop every thread and service. Static members send no LeaveGroup.
        After an error, the state stays ERROR."""
        self._stopping.set()
        self._set_state(AppState.PENDING_SHUTDOWN)
        for service in reversed(self._started_services):
            try:
                service.stop()
            except Exception:
                logger.exception("service stop failed")
        self._started_services.clear()
        threads = self._thread_list()
        for thread in threads:
            thread.stop()
        for thread in threads:
            thread.join(timeout)
        if self._global_thread is not None:
            self._global_thread.stop(timeout)
        if self.fatal_error is None:
            fatal = [t.error for t in threads if isinstance(t.error, FatalThreadError)]
            self.fatal_error = fatal[0] if fatal else None
        if self.fatal_error is not None:
            self._set_state(AppState.PENDING_ERROR)
        self._set_state(AppState.ERROR if self.fatal_error is not None else AppState.NOT_RUNNING)

    def mark(self, name: str) -> None:
        """A hand-off timeline mark of the whole instance (``timeline`` event, thread None)."""
        logger.info("timeline", extra=fields(mark=name, t=round(time.time(), 4)))
        self._emit("timeline", None, mark=name)

    def prepare_for_handoff(self) -> dict[str, Any]:
        """A successor is starting up: write the stores' memory to disk now, in the background,
        so the stop that follows closes them quickly (the partitions wait for that close)."""
        asked = 0
        for thread in self._thread_list():
            if isinstance(thread, ProcessStreamThread):
                continue  # (hand-off is refused in process mode, see stop_for_handoff)
            try:
                asked += thread.persist_stores()
            except ThreadNotRunningError:
                continue
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
        threads = [t for t in self._thread_list() if isinstance(t, StreamThread)]
        if len(threads) != len(self._thread_list()):
            # the children would need the commit/close handshake relayed; a plain restart
            # (static membership: no rebalance) is what the successor falls back to
            raise StreamrtError("a hand-off is not supported with stream.thread.mode=process")
        tasks = sorted(t for thread in threads for t in thread.tasks)
        self._emit("handoff_stopping", None, tasks=tasks)
        self._stopping.set()
        for thread in threads:  # first: processing stops now, services stop meanwhile
            thread.stop()
        self._set_state(AppState.PENDING_SHUTDOWN)
        for service in reversed(self._started_services):  # the successor binds the same port
            try:
                service.stop()
            except Exception:
                logger.exception("service stop failed")
        self._started_services.clear()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.committed.wait(max(0.0, deadline - time.monotonic()))
        late = [t.name for t in threads if not t.committed.is_set()]
        if late:
            raise StreamrtError(f"threads not stopped and committed after {timeout:g}s: {late}")
        unclean = {t.name: str(t.error) for t in threads if not t.stopped_cleanly}
        if unclean or self.fatal_error is not None:
            raise StreamrtError(f"stopped with an error: {self.fatal_error or unclean}")
        self._emit("handoff_released", None, tasks=tasks)
        return {"threads": len(threads), "tasks": tasks}

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

    def health(self) -> Health:
        """Healthy unless the instance is in (or on its way to) ERROR; the reason says why."""
        state = self._state
        failed = self.fatal_error is not None or state in (AppState.ERROR, AppState.PENDING_ERROR)
        threads = {t.name: t.state.value for t in self._thread_list()}
        reason = str(self.fatal_error) if self.fatal_error is not None else None
        return Health(not failed, state.value, reason, threads, self.thread_failures)

    # -- metadata and queries (see StreamsQueries) -----------------------------------------

    def metadata_for_local_threads(self) -> list[ThreadMetadata]:
        return self.queries.metadata_for_local_threads()

    def metadata_for_all_clients(self) -> list[StreamsMetadata]:
        return self.queries.metadata_for_all_clients()

    def metadata_for_key(self, store: str, key: Any) -> StreamsMetadata | None:
        return self.queries.metadata_for_key(store, key)

    def query_local(self, store: str, key: Any, timeout: float = 10.0) -> Any:
        return self.queries.query_local(store, key, timeout)

    def query_window(
        self, store: str, key: Any, time_from: int, time_to: int, timeout: float = 10.0
    ) -> list[tuple[int, int, Any]]:
        """``(start, end, value)`` of ``key``'s windows (window stores: start in the range;
        session stores: sessions overlapping it), read on the task that owns ``key``."""
        return self.queries.query_window(store, key, time_from, time_to, timeout)

    def remove_members(self, instance_ids: Sequence[str]) -> dict[str, KafkaError | None]:
        return self.queries.remove_members(instance_ids)
