"""A real Apache Kafka (KRaft) on 127.0.0.1, assembled from Maven Central, for tests and people.

Why: the runtime must work on the system it follows, not only on our embedded broker. There is
no Kafka tarball on Maven Central, so ``maven/apache-kafka-pom.xml`` (package data) resolves
the broker's classpath once into a cache outside the repository
(``~/.cache/streamrt/apache-kafka-<v>``, :mod:`streamrt.dev.maven_libs`), and this module
formats storage (``kafka.tools.StorageTool``) and runs ``kafka.Kafka`` per node.

One node, or three combined broker+controller nodes with a static 3-voter quorum (3 JVMs, not
6, on a 2-core machine), replication factor 3 and ``min.insync.replicas=2``. Every wait has a
deadline; a node that exits is reported with the tail of its log.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from streamrt.dev.maven_libs import (
    KAFKA_VERSION,
    KafkaUnavailable,
    cache_root,
    ensure_libs,
    libs_dir,
)

__all__ = (
    "KAFKA_VERSION",
    "ApacheKafka",
    "BrokerDied",
    "KafkaNode",
    "KafkaStartError",
    "KafkaUnavailable",
    "PortTaken",
    "cache_root",
    "ensure_libs",
    "libs_dir",
)

logger = logging.getLogger(__name__)

_BIND_ERRORS = ("Socket server failed to bind", "Address already in use")

_LOG4J2 = """\
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{HH:mm:ss.SSS} %-5p %c{1} - %m%n
logger.storage.name = org.apache.kafka.storage.internals.log
logger.storage.level = WARN
logger.log.name = kafka.log
logger.log.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
"""


class KafkaStartError(RuntimeError):
    """A node did not become ready; the message carries its log tail."""


class PortTaken(KafkaStartError):
    """A requested port is already in use on 127.0.0.1."""


class BrokerDied(RuntimeError):
    """A node that should be running has exited; the message carries its log tail."""


def _bind_error_lines(log: Path) -> str:
    """The log's lines that say a port was taken (empty: none)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(
        line for line in text.splitlines() if any(marker in line for marker in _BIND_ERRORS)
    )


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports the kernel just handed out on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` string; one starting with '-' would be read as a CLI option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def die_with_parent() -> None:
    """Linux: the JVM gets SIGTERM if the process that started it dies (no orphan JVMs)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class KafkaNode:
    """One combined broker+controller JVM and the files it owns."""

    node_id: int
    port: int
    controller_port: int
    data_dir: Path
    config_path: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log_file: IO[bytes] | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return _tail(self.log_path.read_text(errors="replace"), lines)
        except OSError:
            return "(no log)"


class ApacheKafka:
    """``with ApacheKafka(brokers=3) as kafka: kafka.bootstrap`` -- a KRaft cluster on loopback.

    ``overrides`` are broker configs (Kafka's names) applied to every node. ``port`` pins the
    first broker port (brokers use ``port..port+n-1``, controllers the next ``n``); by default
    free ports are picked.
    """

    def __init__(
        self,
        brokers: int = 1,
        *,
        work_dir: Path,
        overrides: Mapping[str, str] | None = None,
        port: int | None = None,
        heap: str = "320m",
        version: str = KAFKA_VERSION,
    ) -> None:
        if brokers not in (1, 3):
            raise ValueError("brokers must be 1 or 3")
        self.brokers = brokers
        self.work_dir = work_dir
        self.overrides = dict(overrides or {})
        self.port = port
        self.heap = heap
        self.version = version
        self.cluster_id = random_cluster_id()
        self.nodes: list[KafkaNode] = []
        self._libs: Path | None = None

    # -- configuration --------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        (found,) = [n for n in self.nodes if n.node_id == node_id]
        return found

    def _ports(self) -> list[int]:
        count = 2 * self.brokers
        if self.port is None:
            return free_ports(count)
        wanted = list(range(self.port, self.port + count))
        taken = [p for p in wanted if not port_is_free(p)]
        if taken:
            raise PortTaken(
                f"127.0.0.1:{taken[0]} is already in use (another broker?); Apache Kafka "
                f"needs ports {wanted[0]}-{wanted[-1]}: pick another --port"
            )
        return wanted

    def _properties(self, node: KafkaNode, voters: str) -> dict[str, str]:
        rf, min_isr = ("3", "2") if self.brokers == 3 else ("1", "1")
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.quorum.voters": voters,
            "log.dirs": str(node.data_dir),
            "num.partitions": "1",
            "default.replication.factor": rf,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min_isr,
            "share.coordinator.state.topic.num.partitions": "1",
            # Tests run rebalances with 0.5-6 s sessions, with no delay before the first join.
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": "500",
            # A 2-core machine: few threads, and patience while 3 JVMs start at once.
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "initial.broker.registration.timeout.ms": "120000",
            "log.retention.check.interval.ms": "1000",
        }
        props.update(self.overrides)
        return props

    def _prepare(self) -> None:
        ports = self._ports()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "log4j2.properties").write_text(_LOG4J2)
        self.nodes = [
            KafkaNode(
                node_id=i + 1,
                port=ports[i],
                controller_port=ports[self.brokers + i],
                data_dir=self.work_dir / f"node{i + 1}" / "data",
                config_path=self.work_dir / f"node{i + 1}" / "server.properties",
                log_path=self.work_dir / f"node{i + 1}" / "server.log",
            )
            for i in range(self.brokers)
        ]
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        for n in self.nodes:
            shutil.rmtree(n.data_dir, ignore_errors=True)
            n.data_dir.mkdir(parents=True)
            lines = [f"{k}={v}" for k, v in self._properties(n, voters).items()]
            n.config_path.write_text("\n".join(lines) + "\n")

    def _java(self, main: str, *args: str, heap: str) -> list[str]:
        assert self._libs is not None
        return [
            "java",
            f"-Xmx{heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.work_dir}",
            "-cp",
            f"{self._libs}/*",
            main,
            *args,
        ]

    def _format(self, timeout: float) -> None:
        """``kafka-storage format`` for every node at once, with one cluster id."""
        procs = [
            subprocess.Popen(
                self._java(
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    str(n.config_path),
                    heap="128m",
                ),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for n in self.nodes
        ]
        for n, p in zip(self.nodes, procs, strict=True):
            try:
                out, _ = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            if p.returncode != 0:
                raise KafkaStartError(
                    f"formatting node {n.node_id} failed (exit {p.returncode}):\n"
                    + _tail(out.decode(errors="replace"))
                )

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 180.0) -> ApacheKafka:
        """Download (once), format, start every node together and wait until ready."""
        self._libs = ensure_libs(self.version)
        attempts = 1 if self.port is not None else 3
        for attempt in range(attempts):
            self._prepare()
            self._format(timeout=60)
            for n in self.nodes:
                self._launch(n)
            try:
                self.wait_ready(timeout)
                return self
            except PortTaken:  # a free port was grabbed between picking and binding
                self.stop()
                if attempt == attempts - 1:
                    raise
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _launch(self, node: KafkaNode) -> None:
        node.log_file = open(node.log_path, "ab")  # noqa: SIM115 -- closed by _reap
        in_main = threading.current_thread() is threading.main_thread()
        node.process = subprocess.Popen(
            self._java("kafka.Kafka", str(node.config_path), heap=self.heap),
            stdout=node.log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            # Only from the main thread: PDEATHSIG fires when the starting *thread* exits.
            preexec_fn=die_with_parent if in_main else None,
        )
        logger.info("started Apache Kafka node %d on %s", node.node_id, node.address)

    def check_alive(self, expected: list[KafkaNode] | None = None) -> None:
        """Raise :class:`BrokerDied` (or :class:`PortTaken`) naming a node that exited."""
        for n in expected if expected is not None else self.nodes:
            if n.process is not None and n.process.poll() is not None:
                tail = n.log_tail()
                message = (
                    f"Apache Kafka node {n.node_id} ({n.address}) exited with "
                    f"{n.process.returncode}; last lines of {n.log_path}:\n{tail}"
                )
                # the bind error may sit above the last lines (the config dump can follow it)
                bind = _bind_error_lines(n.log_path)
                if bind:
                    raise PortTaken(f"{message}\nthe bind error:\n{bind}")
                raise BrokerDied(message)

    def wait_ready(self, timeout: float = 120.0, *, nodes: list[KafkaNode] | None = None) -> None:
        """Until every running node is registered and ``__consumer_offsets`` is fully in sync.

        Checked with a real client: a Metadata request lists only unfenced brokers, and a
        FindCoordinator creates the offsets topic.
        """
        from confluent_kafka.admin import AdminClient

        expected = nodes if nodes is not None else self.nodes
        admin = AdminClient(
            {"bootstrap.servers": self.bootstrap, "log_level": 0, "socket.timeout.ms": 5000}
        )
        rf = 3 if self.brokers == 3 else 1
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            try:
                self.check_alive(expected)
            except BrokerDied as exc:
                raise KafkaStartError(str(exc)) from None
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- node {n.node_id}:\n{n.log_tail(15)}" for n in expected)
                raise KafkaStartError(
                    f"Apache Kafka not ready within {timeout:g} s ({last}):\n{tails}"
                )
            try:
                md = admin.list_topics(timeout=3)
                ids = {b for b in md.brokers}
                if not {n.node_id for n in expected} <= ids:
                    last = f"registered brokers {sorted(ids)}"
                elif "__consumer_offsets" not in md.topics:
                    last = "no __consumer_offsets yet"
                    for f in admin.describe_consumer_groups(["streamrt-ready-probe"]).values():
                        with contextlib.suppress(Exception):
                            f.result(timeout=3)
                else:
                    parts = md.topics["__consumer_offsets"].partitions.values()
                    if parts and all(p.leader >= 0 and len(p.isrs) == rf for p in parts):
                        return
                    last = "__consumer_offsets partitions not all in sync"
            except Exception as exc:
                last = str(exc)
            time.sleep(0.5)

    def stop_node(self, node_id: int, *, kill: bool = False, timeout: float = 30.0) -> None:
        """SIGTERM (controlled shutdown) or SIGKILL one node, and wait for it."""
        node = self.node(node_id)
        self._signal_and_reap([node], signal.SIGKILL if kill else signal.SIGTERM, timeout)

    def start_node(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped node on its old ports and data; wait until the cluster is whole."""
        node = self.node(node_id)
        if node.running():
            return
        self._launch(node)
        self.wait_ready(timeout)

    def restore(self, timeout: float = 120.0) -> None:
        """Start every node that is not running (after a test stopped or killed one)."""
        stopped = [n for n in self.nodes if not n.running()]
        for n in stopped:
            self._reap(n)
            self._launch(n)
        if stopped:
            self.wait_ready(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM every node, wait up to ``timeout`` s, then SIGKILL what is left.

        A broker's controlled shutdown needs an active controller: once the nodes still
        running are no longer a majority of the voters, the last ones would wait forever,
        so they get SIGKILL after a short grace instead of the whole ``timeout``.
        """
        for n in self.nodes:
            if n.running():
                assert n.process is not None
                with contextlib.suppress(ProcessLookupError):
                    n.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        quorum_lost_at: float | None = None
        while any(n.running() for n in self.nodes) and time.monotonic() < deadline:
            running = sum(n.running() for n in self.nodes)
            if self.brokers > 1 and running <= self.brokers // 2:
                quorum_lost_at = quorum_lost_at or time.monotonic()
                if time.monotonic() - quorum_lost_at > 3:
                    break
            time.sleep(0.1)
        self._signal_and_reap(self.nodes, signal.SIGKILL, 10)

    def _signal_and_reap(self, nodes: list[KafkaNode], sig: int, timeout: float) -> None:
        for n in nodes:
            if n.running():
                assert n.process is not None
                with contextlib.suppress(ProcessLookupError):
                    n.process.send_signal(sig)
        deadline = time.monotonic() + timeout
        for n in nodes:
            if n.process is None:
                continue
            try:
                n.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning("node %d ignored SIGTERM for %g s: SIGKILL", n.node_id, timeout)
                n.process.kill()
                n.process.wait(10)
            self._reap(n)

    def _reap(self, node: KafkaNode) -> None:
        if node.log_file is not None:
            node.log_file.close()
            node.log_file = None

    def __enter__(self) -> ApacheKafka:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
