"""The project's bounce test, in the spirit of Apache Kafka's streams system tests
(``streams_broker_bounce_test.py``, ``streams_eos_test.py``): a stateful app
(:mod:`tests.chaos.chaos_app`: a table join, a repartition, a per-key fold, a windowed count) runs
as static instances while a feeder writes orders at a steady rate and a seeded schedule of
faults hits the instances and the broker. At the end every output is read back with
read_committed and checked against the input topic: exactly (exactly-once) or with nothing
lost (at-least-once), and each fault's gap (the longest time an input partition's outputs
stopped appearing around it) is reported against its downtime.

``run(ChaosConfig(...))`` returns a :class:`ChaosReport`; ``bench/chaos_bounce.py`` is the CLI.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.chaos.chaos_app import INPUT, OUTPUTS, TABLE
from tests.chaos.faults import (
    BROKER_KINDS,
    INSTANCE_KINDS,
    ApacheCluster,
    Cluster,
    EmbeddedCluster,
    Fault,
    Instance,
    schedule,
)
from tests.chaos.watch import (
    Expected,
    Feeder,
    Verdict,
    Watcher,
    expected_from_input,
    gap_around,
    verdict,
)

__all__ = ("ChaosConfig", "ChaosReport", "FaultResult", "run")

REGIONS = 4
# the clients' librdkafka log goes to logging (kept with the test), not to the terminal
_LOG = logging.getLogger("tests.chaos.clients")


@dataclass
class ChaosConfig:
    work: Path
    guarantee: str = "at_least_once"  # or exactly_once_v2
    seed: int = 1
    faults: int = 5
    kinds: tuple[str, ...] = INSTANCE_KINDS + BROKER_KINDS
    kafka: str = "embedded"  # or apache (3 brokers)
    instances: int = 2
    threads: int = 1
    partitions: int = 4
    users: int = 40
    rate: float = 100.0  # orders per second
    session_timeout_ms: int = 6000
    settle_s: float = 4.0  # after each fault's recovery, before the next one
    warmup_s: float = 3.0
    drain_s: float = 90.0
    log: Callable[[str], None] = print


@dataclass
class FaultResult:
    kind: str
    target: str
    at_s: float  # since the feed started
    down_s: float
    gap_s: float = 0.0

    @property
    def excess_s(self) -> float:
        return round(self.gap_s - self.down_s, 2)


@dataclass
class ChaosReport(Verdict):
    """A run's verdict (lost, duplicated, wrong keys per output) with what led to it."""

    config: dict[str, Any] = field(default_factory=dict)
    inputs: int = 0
    faults: list[FaultResult] = field(default_factory=list)
    gap_before_faults_s: float = 0.0
    instance_logs: dict[str, str] = field(default_factory=dict)

    def table(self) -> str:
        rows = [f"{'fault':<15}{'target':<12}{'at':>7}{'down':>7}{'gap':>7}{'excess':>8}"]
        for f in self.faults:
            rows.append(
                f"{f.kind:<15}{f.target:<12}{f.at_s:>6.1f}s{f.down_s:>6.1f}s"
                f"{f.gap_s:>6.2f}s{f.excess_s:>7.2f}s"
            )
        rows.append(
            f"inputs {self.inputs}; lost {self.total_lost} {self.lost}; "
            f"duplicated {self.total_duplicated}; gap before faults {self.gap_before_faults_s:.2f}s"
        )
        return "\n".join(rows)

    def to_json(self) -> str:
        data = asdict(self)
        for row, f in zip(data["faults"], self.faults, strict=True):
            row["excess_s"] = f.excess_s
        return json.dumps(data, indent=2, default=str)


def _settings(config: ChaosConfig) -> dict[str, str]:
    return {
        "processing.guarantee": config.guarantee,
        "session.timeout.ms": str(config.session_timeout_ms),
        "heartbeat.interval.ms": "500",
        "commit.interval.ms": "100" if config.guarantee == "exactly_once_v2" else "500",
        "statestore.cache.max.bytes": "0",
    }


def _create_topics(bootstrap: str, partitions: int, replication: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(t, partitions, replication) for t in (INPUT, TABLE, *OUTPUTS)]
    for topic, done in admin.create_topics(topics, request_timeout=30).items():
        try:
            done.result(60)
        except Exception as exc:  # already there (a rerun in the same work dir)
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise RuntimeError(f"creating {topic}: {exc}") from exc


def _load_table(bootstrap: str, users: int) -> dict[str, str]:
    region_of = {f"u{i}": f"r{i % REGIONS}" for i in range(users)}
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "partitioner": "murmur2_random",
            "logger": _LOG,
        }
    )
    for user, region in region_of.items():
        producer.produce(TABLE, key=user, value=region)
    if producer.flush(60):
        raise RuntimeError("the user-regions table was not written")
    return region_of


def _read(
    bootstrap: str, topics: tuple[str, ...], partitions: int, *, committed: bool
) -> list[Any]:
    """Every record of ``topics`` from the start to the end (partition EOF), offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"chaos-read-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
            "logger": _LOG,
        }
    )
    tps = [TopicPartition(t, p, 0) for t in topics for p in range(partitions)]
    consumer.assign(tps)
    pending = {(tp.topic, tp.partition) for tp in tps}
    out: list[Any] = []
    deadline = time.monotonic() + 120
    try:
        while pending and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard((m.topic(), m.partition()))
                    continue
                out.append(m)
        if pending:
            raise RuntimeError(f"could not read {sorted(pending)} to the end")
    finally:
        consumer.close()
    return out


def _caught_up(bootstrap: str, partitions: int, group: str = "chaos") -> bool:
    """The app committed the whole user-regions table (its join has every user)."""
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "logger": _LOG})
    try:
        tps = [TopicPartition(TABLE, p) for p in range(partitions)]
        committed = probe.committed(tps, timeout=10)
        for tp in committed:
            _, high = probe.get_watermark_offsets(TopicPartition(TABLE, tp.partition), timeout=10)
            if tp.offset < high:
                return False
        return True
    except Exception:
        return False
    finally:
        probe.close()


def _wait(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def _apply(
    fault: Fault,
    cluster: Cluster,
    instances: list[Instance],
    rng: random.Random,
) -> str:
    """Inject ``fault`` and bring the target back; return what was hit."""
    if fault.kind == "broker-kill":
        return cluster.kill(fault.down_s, rng)
    if fault.kind == "broker-pause":
        return cluster.pause(fault.down_s, rng)
    target = instances[fault.target]
    if fault.kind == "instance-kill":
        target.stop(signal.SIGKILL)
        time.sleep(fault.down_s)
        target.start()
    elif fault.kind == "instance-term":
        target.stop(signal.SIGTERM)
        time.sleep(fault.down_s)
        target.start()
    elif fault.kind == "zombie":
        target.send(signal.SIGSTOP)
        time.sleep(fault.down_s)
        target.send(signal.SIGCONT)
    else:
        raise ValueError(f"unknown fault kind {fault.kind!r}")
    return target.instance_id


def _drained(watcher: Watcher, expected: Expected) -> bool:
    """Every output's every key has come out at least at its expected count: the per-user
    counts, and the region counts behind the repartition topic and the windowed counts, which
    can lag them (a restarted instance's sub-topology may still be catching up)."""
    last: dict[tuple[str, str], int] = {}
    for topic, _, key, value, _ in watcher.snapshot():
        last[(topic, key)] = value
    return all(
        last.get((topic, k), 0) >= n for topic in OUTPUTS for k, n in expected.of(topic).items()
    )


def run(config: ChaosConfig) -> ChaosReport:
    """One bounce run; raises only when the run itself cannot go on (a broker that will not
    start, an instance that exits by itself): wrong outputs are in the report."""
    log = config.log
    if config.work.exists():
        shutil.rmtree(config.work)
    config.work.mkdir(parents=True)
    cluster: Cluster = (
        ApacheCluster(config.work) if config.kafka == "apache" else EmbeddedCluster(config.work)
    )
    instances: list[Instance] = []
    feeder: Feeder | None = None
    watcher = Watcher(cluster.bootstrap)
    faults = schedule(
        config.seed,
        config.faults,
        config.kinds,
        config.instances,
        zombie_s=config.session_timeout_ms / 1000 + 3,
    )
    rng = random.Random(config.seed)
    try:
        _create_topics(cluster.bootstrap, config.partitions, 3 if config.kafka == "apache" else 1)
        region_of = _load_table(cluster.bootstrap, config.users)
        settings = _settings(config)
        instances = [
            Instance(i, config.work, cluster.bootstrap, config.threads, settings)
            for i in range(config.instances)
        ]
        for inst in instances:
            inst.start()
        _wait(
            "the app to read the table",
            lambda: _caught_up(cluster.bootstrap, config.partitions),
            120,
        )
        watcher.start(config.partitions)
        feeder = Feeder(cluster.bootstrap, config.users, config.rate, config.seed)
        started = time.monotonic()
        feeder.start()
        log(f"chaos: {config.guarantee} on {config.kafka}, seed {config.seed}: {faults}")
        time.sleep(config.warmup_s)
        quiet_end = time.monotonic()
        marks: list[tuple[FaultResult, float, float]] = []
        for fault in faults:
            for inst in instances:
                if not inst.alive():
                    raise RuntimeError(f"{inst.instance_id} exited by itself:\n{inst.log_tail()}")
            at = time.monotonic()
            target = _apply(fault, cluster, instances, rng)
            back = time.monotonic()
            # a zombie's partitions wait for its session to expire, not for its whole pause
            down = config.session_timeout_ms / 1000 if fault.kind == "zombie" else back - at
            result = FaultResult(fault.kind, target, round(at - started, 1), round(down, 2))
            marks.append((result, at, back))
            log(f"chaos: {fault.kind} {target} at {result.at_s}s, down {result.down_s}s")
            time.sleep(config.settle_s)
        feeder.stop()
        inputs = _read(cluster.bootstrap, (INPUT,), config.partitions, committed=False)
        expected = expected_from_input(
            [(m.key().decode(), m.timestamp()[1]) for m in inputs], region_of
        )
        try:
            _wait(
                "the outputs to catch up",
                lambda: _drained(watcher, expected),
                config.drain_s,
            )
        except TimeoutError as exc:
            log(f"chaos: {exc}")
        time.sleep(1.0)  # the other outputs' last commit
        watcher.stop()
        seen = watcher.snapshot()
        for result, at, back in marks:
            result.gap_s = round(gap_around(seen, at, back + 1.0), 2)
        quiet_gap = gap_around(seen, started + 1.0, quiet_end)
        outputs = _read(cluster.bootstrap, OUTPUTS, config.partitions, committed=True)
        updates: dict[str, dict[str, list[int]]] = {}
        for m in outputs:
            value = struct.unpack(">q", m.value())[0]
            updates.setdefault(m.topic(), {}).setdefault(m.key().decode(), []).append(value)
        judged: Verdict = verdict(updates, expected, config.guarantee == "exactly_once_v2")
        report = ChaosReport(
            config={
                k: (str(v) if isinstance(v, Path) else v)
                for k, v in asdict(config).items()
                if k != "log"
            },
            inputs=len(inputs),
            faults=[m[0] for m in marks],
            lost=judged.lost,
            duplicated=judged.duplicated,
            wrong_keys=judged.wrong_keys,
            gap_before_faults_s=round(quiet_gap, 2),
        )
        if judged.total_lost or (config.guarantee == "exactly_once_v2" and judged.total_duplicated):
            report.instance_logs = {i.instance_id: i.log_tail(60) for i in instances}
        log(report.table())
        return report
    finally:
        if feeder is not None:
            feeder.halt()
        for inst in instances:
            inst.stop(signal.SIGTERM, timeout=30)
        cluster.close()
