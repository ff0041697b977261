"""The rolling-deploy scenario: broker, topics, load, instances, deploy, report.

Shared by ``streamrt demo``, ``bench/rolling_deploy.py`` and the tests, so all three measure
the same thing: the sessions app (heavy state) as N instances x T threads under steady load,
restarted one instance at a time.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamrt.broker.embedded import BrokerThread
from streamrt.client_config import ClientConfig, redact
from streamrt.deploy.event_tail import EventTail
from streamrt.deploy.kafka_io import (
    coordinator_rebalances,
    create_topics,
    group_lag,
    read_topic,
)
from streamrt.deploy.loadgen import LoadGenerator, preload
from streamrt.deploy.processes import InstanceSpec, LocalInstance, write_client_properties
from streamrt.deploy.report import (
    DeployReport,
    check_output,
    count_rebalances,
    count_restores,
    find_leader,
    gap_series,
    longest_gaps,
)
from streamrt.deploy.rolling import rolling_restart, wait_all_running

__all__ = ("ScenarioConfig", "run_scenario")

Progress = Callable[[str], None]
STARTUP_DELAY_ENV = "SESSIONS_STARTUP_DELAY"  # apps/sessions.py sleeps this long at import
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(slots=True)
class ScenarioConfig:
    """Sizes and timings; ``static=False`` runs the same app with dynamic membership."""

    work_dir: Path
    static: bool = True
    instances: int = 3
    threads: int = 2
    partitions: int = 12
    users: int = 20_000
    rate: float = 300.0
    restart_delay: float = 0.0
    stop_signal: int = signal.SIGTERM
    session_timeout_ms: int = 10_000
    commit_interval_ms: int = 1_000
    baseline_seconds: float = 3.0
    after_seconds: float = 3.0
    target: str = "apps.sessions:app"
    application_id: str = "sessions"
    input_topic: str = "clicks"
    output_topic: str = "session-profiles"
    timeout: float = 600.0
    label: str = ""
    # Another runtime's worker instead of ``streamrt run`` (see ``deploy.processes``); its
    # threads per instance are ``threads``.
    command: tuple[str, ...] = ()
    mode: str = "restart"  # or "handoff": the successor starts up beside the old process
    startup_delay: float = 0.0  # extra seconds the app takes to start (SESSIONS_STARTUP_DELAY)
    # An existing, empty broker (e.g. Apache Kafka from ``streamrt dev kafka``) instead of a
    # fresh embedded one; the broker's own rebalance count is then not available.
    bootstrap: str = ""
    # ``exactly_once_v2``: outputs, changelogs and offsets in one transaction per commit
    processing_guarantee: str = "at_least_once"
    # Kafka client properties (security.protocol, ssl.*, sasl.*; Kafka's names, with the
    # consumer./producer./admin. prefixes) for every client of the driver and the instances
    client: dict[str, str] = field(default_factory=dict)

    def client_config(self) -> ClientConfig | None:
        return ClientConfig.from_properties(self.client) if self.client else None

    @property
    def contender(self) -> str:
        if self.label:
            return self.label
        if self.mode == "handoff":
            return "streamrt handoff"
        name = "streamrt static" if self.static else "streamrt dynamic"
        return f"{name} EOS" if self.processing_guarantee != "at_least_once" else name

    def settings_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["work_dir"] = str(self.work_dir)
        out["stop_signal"] = signal.Signals(self.stop_signal).name
        out["client"] = redact(self.client)  # the report is written to disk: no secrets
        return out


BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "4",
}


def _specs(cfg: ScenarioConfig, bootstrap: str) -> list[InstanceSpec]:
    client = cfg.client_config()
    client_file = None
    if client is not None:  # a 0600 file, not flags: ``ps`` would show every user a password
        client_file = write_client_properties(cfg.work_dir / "client-config.json", client)
    settings = {
        "session.timeout.ms": str(cfg.session_timeout_ms),
        "heartbeat.interval.ms": str(max(cfg.session_timeout_ms // 10, 100)),
        "commit.interval.ms": str(cfg.commit_interval_ms),
        "application.id": cfg.application_id,
    }
    if cfg.processing_guarantee != "at_least_once" and not cfg.command:
        settings["processing.guarantee"] = cfg.processing_guarantee
    if cfg.command:
        settings["num.partitions"] = str(cfg.partitions)
    return [
        InstanceSpec(
            name=f"instance-{n}",
            target=cfg.target,
            bootstrap=bootstrap,
            state_dir=cfg.work_dir / f"state-{n}",
            threads=cfg.threads,
            instance_id=f"instance-{n}" if cfg.static else None,
            log_path=cfg.work_dir / "logs" / f"instance-{n}.log",
            settings=settings,
            cwd=REPO_ROOT,
            argv=cfg.command,
            env={STARTUP_DELAY_ENV: str(cfg.startup_delay)} if cfg.startup_delay else {},
            client_config_file=client_file,
        )
        for n in range(1, cfg.instances + 1)
    ]


def _wait_caught_up(cfg: ScenarioConfig, bootstrap: str, say: Progress, what: str) -> None:
    deadline = time.monotonic() + cfg.timeout
    last_print = 0.0
    while True:
        lag = group_lag(
            bootstrap, cfg.application_id, cfg.input_topic, cfg.partitions, cfg.client_config()
        )
        if lag == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: still {lag} records behind after {cfg.timeout:.0f}s")
        if time.monotonic() - last_print > 5:
            say(f"  {what}: {lag} records to go")
            last_print = time.monotonic()
        time.sleep(0.5)


def run_scenario(cfg: ScenarioConfig, progress: Progress | None = None) -> DeployReport:
    """Run the whole scenario on a fresh embedded broker in ``cfg.work_dir`` (or on
    ``cfg.bootstrap``)."""
    say = progress or (lambda _msg: None)
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    broker = None
    if not cfg.bootstrap:
        broker = BrokerThread(cfg.work_dir / "broker", BROKER_OVERRIDES, metrics_port=0).start()
    instances: list[LocalInstance] = []
    client = cfg.client_config()
    if client is not None:
        client.validate()  # a bad setting fails here, naming it, not in every instance
    try:
        metrics_url = None
        if broker is not None:
            bootstrap = broker.bootstrap
            assert broker.broker is not None
            metrics_url = f"http://127.0.0.1:{broker.broker.metrics_bound_port}/metrics"
        else:
            bootstrap = cfg.bootstrap
        say(f"[{cfg.contender}] broker at {bootstrap}; topics {cfg.partitions} partitions")
        create_topics(
            bootstrap,
            {
                cfg.input_topic: (cfg.partitions, {}),
                cfg.output_topic: (
                    cfg.partitions,
                    {"message.timestamp.type": "LogAppendTime"},
                ),
            },
            client,
        )
        sent: Counter[str] = Counter()
        t0 = time.monotonic()
        preload(bootstrap, cfg.input_topic, cfg.users, sent, client=client)
        say(f"  preloaded {cfg.users} users in {time.monotonic() - t0:.1f}s")
        with EventTail(bootstrap, cfg.application_id, client) as tail:
            instances = [LocalInstance(s) for s in _specs(cfg, bootstrap)]
            for instance in instances:
                instance.start()
            mode = "static" if cfg.static else "dynamic"
            say(f"  started {cfg.instances} instances x {cfg.threads} threads ({mode})")
            wait_all_running(tail, instances, cfg.threads, cfg.timeout)
            t0 = time.monotonic()
            _wait_caught_up(cfg, bootstrap, say, "building state")
            say(f"  state built and caught up in {time.monotonic() - t0:.1f}s")
            load = LoadGenerator(
                bootstrap, cfg.input_topic, cfg.users, cfg.rate, client=client
            ).start()
            time.sleep(cfg.baseline_seconds)
            say(f"  load running at {cfg.rate:g} clicks/s; rolling restart begins")
            rebalances_before = _broker_rebalances(metrics_url, cfg.application_id)
            timeline = rolling_restart(
                tail,
                instances,
                threads=cfg.threads,
                restart_delay=cfg.restart_delay,
                stop_signal=cfg.stop_signal,
                ready_timeout=cfg.timeout,
                on_step=say,
                mode=cfg.mode,
            )
            time.sleep(cfg.after_seconds)
            rebalances_after = _broker_rebalances(metrics_url, cfg.application_id)
            load.stop()
            say(f"  deploy done in {timeline.duration:.1f}s; draining")
            _wait_caught_up(cfg, bootstrap, say, "draining")
            events = tail.events()
        for instance in instances:
            instance.stop()
        sent.update(load.sent)
        output = read_topic(bootstrap, cfg.output_topic, cfg.partitions, client)
        report = _report(cfg, timeline, events, output, sent)
        if rebalances_after is not None and rebalances_before is not None:
            report.coordinator_rebalances = rebalances_after - rebalances_before
        return report
    finally:
        for instance in instances:
            instance.stop(signal.SIGKILL)
        if broker is not None:
            broker.stop()


def _broker_rebalances(metrics_url: str | None, group: str) -> int | None:
    """The embedded broker's count; None on another broker (no such metric)."""
    if metrics_url is None:
        return None
    return coordinator_rebalances(metrics_url, group) or 0


def _report(
    cfg: ScenarioConfig,
    timeline: Any,
    events: list[dict[str, Any]],
    output: list[Any],
    sent: Counter[str],
) -> DeployReport:
    rebalances, generations = count_rebalances(events, timeline.start)
    restored_records, restored_bytes = count_restores(events, timeline.start)
    baseline_start = timeline.start - cfg.baseline_seconds
    series = gap_series(output, timeline.start, timeline.end)
    gaps = longest_gaps(series)
    baseline = longest_gaps(gap_series(output, baseline_start + 0.5, timeline.start))
    correctness, state_bytes = check_output(output, sent)
    return DeployReport(
        contender=cfg.contender,
        settings=cfg.settings_json(),
        rebalances=rebalances,
        generations=generations,
        restored_records=restored_records,
        restored_bytes=restored_bytes,
        longest_gap_s=max(gaps.values(), default=0.0),
        baseline_gap_s=max(baseline.values(), default=0.0),
        gap_by_partition=gaps,
        records_in=sum(sent.values()),
        records_out=len(output),
        state_bytes=state_bytes,
        correctness=correctness,
        timeline=timeline,
        gap_points=series,
        leader=find_leader(events, timeline),
        notes=[],
    )
