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
    describe_streams_group,
    group_lag,
    read_topic,
    streams_group_epoch,
)
from streamrt.deploy.loadgen import LoadGenerator, preload, preload_changelog
from streamrt.deploy.processes import (
    InstanceSpec,
    LocalInstance,
    check_alive,
    sleep_watching,
    write_client_properties,
)
from streamrt.deploy.report import (
    DeployReport,
    check_output,
    count_rebalances,
    count_restores,
    find_leader,
    gap_series,
    handoff_timelines,
    longest_gaps,
)
from streamrt.deploy.rolling import rolling_restart, wait_all_running
from streamrt.deploy.task_moves import task_moves
from streamrt.runtime.graph.topology import changelog_topic

__all__ = ("ScenarioConfig", "run_scenario")

Progress = Callable[[str], None]
STARTUP_DELAY_ENV = "SESSIONS_STARTUP_DELAY"  # the sessions app sleeps this long at import
_ROOT = Path(__file__).resolve().parents[2]
# The checkout this runs from, where ``apps.*`` targets resolve; None when installed.
REPO_ROOT: Path | None = _ROOT if (_ROOT / "apps").is_dir() else None


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
    target: str = "streamrt.examples.sessions:app"  # ships in the package
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
    # "input": one click per user through the app (the app folds it); "changelog": each
    # user's profile written straight into the store's changelog, restored into RocksDB by
    # the app's first start (fast for GBs of state; streamrt's own app only)
    preload: str = "input"
    store: str = "profiles"  # the app's store, whose changelog "changelog" preloading fills
    # Kafka client properties (security.protocol, ssl.*, sasl.*; Kafka's names, with the
    # consumer./producer./admin. prefixes) for every client of the driver and the instances
    client: dict[str, str] = field(default_factory=dict)
    # REST ports of the instances (application.server 127.0.0.1:<port>, the same port across
    # restarts): ``streamrt demo`` points its console at them. Empty: no REST endpoint.
    rest_ports: tuple[int, ...] = ()
    # "streams": the stream threads join a KIP-1071 streams group (the broker assigns tasks;
    # ``session_timeout_ms`` then sets the embedded broker's group.streams.session.timeout.ms)
    group_protocol: str = "classic"

    def client_config(self) -> ClientConfig | None:
        return ClientConfig.from_properties(self.client) if self.client else None

    @property
    def contender(self) -> str:
        if self.label:
            return self.label
        if self.mode == "handoff":
            return "streamrt handoff"
        name = "streamrt static" if self.static else "streamrt dynamic"
        if self.group_protocol == "streams":
            name += ", streams protocol"
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


def broker_overrides(cfg: ScenarioConfig) -> dict[str, str]:
    """:data:`BROKER_OVERRIDES`, and a streams group's timeouts from the scenario's: under
    ``group.protocol=streams`` the broker's settings apply, not the members'."""
    heartbeat = max(cfg.session_timeout_ms // 10, 100)
    return {
        **BROKER_OVERRIDES,
        "group.streams.session.timeout.ms": str(cfg.session_timeout_ms),
        "group.streams.heartbeat.interval.ms": str(heartbeat),
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
    if cfg.group_protocol != "classic":
        settings["group.protocol"] = cfg.group_protocol
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
            application_server=_rest_address(cfg.rest_ports, n),
            cwd=REPO_ROOT or cfg.work_dir,
            argv=cfg.command,
            env={STARTUP_DELAY_ENV: str(cfg.startup_delay)} if cfg.startup_delay else {},
            client_config_file=client_file,
        )
        for n in range(1, cfg.instances + 1)
    ]


def _rest_address(ports: tuple[int, ...], n: int) -> str | None:
    """Instance ``n``'s REST endpoint when ``ports`` gives one (not for another runtime)."""
    return f"127.0.0.1:{ports[n - 1]}" if len(ports) >= n else None


def _wait_caught_up(
    cfg: ScenarioConfig,
    bootstrap: str,
    say: Progress,
    what: str,
    instances: list[LocalInstance],
) -> None:
    """Until the group has no lag; raises as soon as an instance exits (none would catch up)."""
    deadline = time.monotonic() + cfg.timeout
    last_print = 0.0
    while True:
        check_alive(instances)
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
        broker = BrokerThread(
            cfg.work_dir / "broker", broker_overrides(cfg), metrics_port=0
        ).start()
    instances: list[LocalInstance] = []
    client = cfg.client_config()
    if client is not None:
        client.validate()  # a bad setting fails here, naming it, not in every instance
    try:
        bootstrap, metrics_url = _addresses(cfg, broker)
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
        preloaded_bytes = _preload(cfg, bootstrap, sent, say, client)
        notes: list[str] = []
        if cfg.preload == "changelog":
            notes.append(
                f"preloaded {cfg.users:,} profiles, {preloaded_bytes:,} bytes, into "
                f"{changelog_topic(cfg.application_id, cfg.store)}"
            )
        with EventTail(bootstrap, cfg.application_id, client) as tail:
            instances.extend(LocalInstance(s) for s in _specs(cfg, bootstrap))
            _build_state(cfg, bootstrap, tail, instances, say, notes)
            deployed = _deploy(cfg, bootstrap, tail, instances, say, metrics_url)
        for instance in instances:
            instance.stop()
        output = read_topic(bootstrap, cfg.output_topic, cfg.partitions, client)
        return _final_report(cfg, deployed, output, sent, notes, preloaded_bytes)
    finally:
        for instance in instances:
            instance.stop(signal.SIGKILL)
        if broker is not None:
            broker.stop()


def _addresses(cfg: ScenarioConfig, broker: BrokerThread | None) -> tuple[str, str | None]:
    """The bootstrap address, and the embedded broker's metrics URL (None on another)."""
    if broker is None:
        return cfg.bootstrap, None
    assert broker.broker is not None
    return broker.bootstrap, f"http://127.0.0.1:{broker.broker.metrics_bound_port}/metrics"


def _build_state(
    cfg: ScenarioConfig,
    bootstrap: str,
    tail: EventTail,
    instances: list[LocalInstance],
    say: Progress,
    notes: list[str],
) -> None:
    """Start the instances and wait until they are RUNNING and caught up with the preload."""
    for instance in instances:
        instance.start()
    mode = "static" if cfg.static else "dynamic"
    say(f"  started {cfg.instances} instances x {cfg.threads} threads ({mode})")
    t0 = time.monotonic()
    settled = _broker_settled(cfg, bootstrap)
    wait_all_running(tail, instances, cfg.threads, cfg.timeout, cfg.group_protocol, settled)
    _wait_caught_up(cfg, bootstrap, say, "building state", instances)
    say(f"  state built and caught up in {time.monotonic() - t0:.1f}s")
    if cfg.preload == "changelog":
        records, size = count_restores(tail.events(), 0.0)
        notes.append(
            f"first start restored {records:,} records, {size:,} bytes of preloaded "
            f"changelog in {time.monotonic() - t0:.1f}s (start to RUNNING)"
        )


@dataclass(slots=True)
class _Deployed:
    """What the deploy under load left: its timeline, the load, the events, the rebalances
    the broker counted (None on a broker without the metric)."""

    timeline: Any
    load: LoadGenerator
    events: list[dict[str, Any]]
    coordinator_rebalances: int | None


def _deploy(
    cfg: ScenarioConfig,
    bootstrap: str,
    tail: EventTail,
    instances: list[LocalInstance],
    say: Progress,
    metrics_url: str | None,
) -> _Deployed:
    """Start the load, roll every instance, stop the load and drain."""
    load = LoadGenerator(
        bootstrap, cfg.input_topic, cfg.users, cfg.rate, client=cfg.client_config()
    ).start()
    try:  # a dead instance ends the deploy: the load stops with it
        sleep_watching(instances, cfg.baseline_seconds)
        say(f"  load running at {cfg.rate:g} clicks/s; rolling restart begins")
        rebalances_before = _broker_rebalances(cfg, bootstrap, metrics_url)
        timeline = rolling_restart(
            tail,
            instances,
            threads=cfg.threads,
            restart_delay=cfg.restart_delay,
            stop_signal=cfg.stop_signal,
            ready_timeout=cfg.timeout,
            on_step=say,
            mode=cfg.mode,
            protocol=cfg.group_protocol,
            broker_settled=_broker_settled(cfg, bootstrap),
        )
        sleep_watching(instances, cfg.after_seconds)
        rebalances_after = _broker_rebalances(cfg, bootstrap, metrics_url)
    finally:
        load.stop()
    say(f"  deploy done in {timeline.duration:.1f}s; draining")
    _wait_caught_up(cfg, bootstrap, say, "draining", instances)
    rebalances = None
    if rebalances_after is not None and rebalances_before is not None:
        rebalances = rebalances_after - rebalances_before
    return _Deployed(timeline, load, tail.events(), rebalances)


def _final_report(
    cfg: ScenarioConfig,
    deployed: _Deployed,
    output: list[Any],
    sent: Counter[str],
    notes: list[str],
    preloaded_bytes: int,
) -> DeployReport:
    load = deployed.load
    if cfg.preload == "changelog":
        # Only the users the load touched have an output record; the others' profiles
        # live in the state alone (checked by the restore counts, not the output).
        expected = Counter({user: sent[user] + n for user, n in load.sent.items()})
        notes.append(
            f"correctness over the {len(expected):,} users the load touched "
            f"(of {cfg.users:,} preloaded through the changelog)"
        )
    else:
        expected = sent + load.sent
    report = _report(cfg, deployed.timeline, deployed.events, output, expected)
    report.notes.extend(notes)
    if cfg.group_protocol == "streams":
        report.notes.append(
            "streams protocol: rebalances are the new member epochs the threads reconciled to "
            "(rebalance_complete events); the broker's count is the group epoch's bumps "
            "(StreamsGroupDescribe before and after): a bump need not stop anyone, so tasks "
            "moved and survivors not reconciled say what it cost"
        )
    if load.failed:
        report.notes.append(f"{load.failed} clicks the load generator could not deliver")
    if cfg.preload == "changelog":
        report.records_in = load.total
        report.state_bytes = preloaded_bytes
    if deployed.coordinator_rebalances is not None:
        report.coordinator_rebalances = deployed.coordinator_rebalances
    return report


def _preload(
    cfg: ScenarioConfig,
    bootstrap: str,
    sent: Counter[str],
    say: Progress,
    client: ClientConfig | None = None,
) -> int:
    """The state before the deploy: clicks through the app, or profiles into the changelog
    (returns the bytes written there)."""
    t0 = time.monotonic()
    if cfg.preload == "input":
        preload(bootstrap, cfg.input_topic, cfg.users, sent, client=client)
        say(f"  preloaded {cfg.users} users in {time.monotonic() - t0:.1f}s")
        return 0
    if cfg.preload != "changelog" or cfg.command:
        raise ValueError(f"preload must be 'input' or, for streamrt, 'changelog': {cfg.preload!r}")
    changelog = changelog_topic(cfg.application_id, cfg.store)
    create_topics(bootstrap, {changelog: (cfg.partitions, {"cleanup.policy": "compact"})}, client)
    size = preload_changelog(bootstrap, changelog, cfg.users, cfg.partitions, sent, client=client)
    elapsed = time.monotonic() - t0
    say(f"  wrote {cfg.users} profiles ({size / 1e6:.0f} MB) to {changelog} in {elapsed:.1f}s")
    return size


def _broker_settled(cfg: ScenarioConfig, bootstrap: str) -> Callable[[], bool] | None:
    """A streams group's state from the broker: "Stable" once every member has reconciled
    (its members keep their own epochs, so their events cannot say so); None for classic."""
    if cfg.group_protocol != "streams":
        return None

    def stable() -> bool:
        found = describe_streams_group(bootstrap, cfg.application_id, cfg.client_config())
        return found is not None and found[1] == "Stable"

    return stable


def _broker_rebalances(cfg: ScenarioConfig, bootstrap: str, metrics_url: str | None) -> int | None:
    """The broker's count: a streams group's epoch (StreamsGroupDescribe, on any broker), or
    the embedded broker's completed join phases of a classic group; None on another broker
    (no such metric)."""
    if cfg.group_protocol == "streams":
        return streams_group_epoch(bootstrap, cfg.application_id, cfg.client_config())
    if metrics_url is None:
        return None
    return coordinator_rebalances(metrics_url, cfg.application_id) or 0


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
    moves = task_moves(events, timeline)
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
        handoffs=handoff_timelines(events, timeline),
        tasks_moved=moves.moved,
        survivors=moves.survivors,
        survivors_not_reconciled=moves.not_reconciled,
    )
