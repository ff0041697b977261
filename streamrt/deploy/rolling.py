"""The rolling restart, as an orchestrator does it, one instance at a time.

For each instance: send the stop signal, wait for the process to exit, wait ``restart_delay``
(the time a pod is down), start it again and wait until every one of its threads reports
RUNNING in the events topic, then until the whole application is RUNNING again before
moving on. Every step is stamped in a :class:`Timeline`. Every wait also watches the
processes: one that exits unasked stops the deploy with :class:`~streamrt.errors.ChildExited`
(its name, exit code and log tail) instead of a wait until the timeout.

``mode="handoff"`` instead starts the new process with ``--handoff`` while the old one runs;
the old one stops only when the new one has started up (``streamrt.runtime.instance.handoff``). Its
step's ``stop_sent`` is when the successor was started, ``exited`` when the old one exited.
"""

from __future__ import annotations

import functools
import logging
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from streamrt.deploy.event_tail import EventTail
from streamrt.deploy.processes import LocalInstance, check_alive, sleep_watching
from streamrt.logs import fields

__all__ = ("MODES", "RestartStep", "Timeline", "rolling_restart", "wait_all_running", "watching")

MODES = ("restart", "handoff")

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class RestartStep:
    """One instance's restart, wall-clock seconds."""

    instance: str
    signal: str
    old_pid: int | None
    new_pid: int | None = None
    stop_sent: float = 0.0
    exited: float = 0.0
    exit_code: int | None = None
    started: float = 0.0
    running: float = 0.0
    settled: float = 0.0

    @property
    def downtime(self) -> float:
        """From the stop signal until the instance's threads were RUNNING again."""
        return self.running - self.stop_sent


@dataclass(slots=True)
class Timeline:
    """The deploy's steps; ``start``/``end`` bound the window the report looks at."""

    start: float = 0.0
    end: float = 0.0
    steps: list[RestartStep] = field(default_factory=list)

    @property
    def duration(self) -> float:
        """The whole deploy, first stop signal to the last instance RUNNING."""
        return self.end - self.start

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "steps": [{**asdict(s), "downtime": s.downtime} for s in self.steps],
        }


def wait_all_running(
    tail: EventTail,
    instances: Sequence[LocalInstance],
    threads: int,
    timeout: float,
    protocol: str = "classic",
    broker_settled: Callable[[], bool] | None = None,
) -> float:
    """Until every instance's threads report RUNNING and the group has settled (no second
    cooperative round still due: one landing after the deploy began would be counted as the
    deploy's); returns when that was seen. Raises :class:`~streamrt.errors.ChildExited` as
    soon as one of them exits. ``broker_settled``: the broker's word too (a streams group's
    members hear of a new target assignment only at their next heartbeat)."""

    def ready() -> bool:
        pids = [i.pid for i in instances]
        if any(pid is None or not tail.is_running(pid, threads) for pid in pids):
            return False
        if not tail.is_settled([pid for pid in pids if pid is not None], protocol):
            return False
        return broker_settled is None or broker_settled()

    return tail.wait_for(watching(instances, ready), timeout, "every instance RUNNING, settled")


def watching(
    instances: Sequence[LocalInstance], condition: Callable[[], bool]
) -> Callable[[], bool]:
    """``condition`` that first checks that no instance has exited (each poll of a wait)."""

    def check() -> bool:
        check_alive(instances)
        return condition()

    return check


def rolling_restart(
    tail: EventTail,
    instances: Sequence[LocalInstance],
    *,
    threads: int,
    restart_delay: float = 0.0,
    stop_signal: int = signal.SIGTERM,
    ready_timeout: float = 180.0,
    on_step: Callable[[str], None] | None = None,
    mode: str = "restart",
    protocol: str = "classic",
    broker_settled: Callable[[], bool] | None = None,
) -> Timeline:
    """Restart ``instances`` one at a time; returns the timeline. ``protocol``: the group
    protocol (``group.protocol``), which says when the group has settled, with
    ``broker_settled`` (see :func:`wait_all_running`)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    say = on_step or (lambda _msg: None)
    timeline = Timeline(start=time.time())
    for n, instance in enumerate(instances, 1):
        name = instance.spec.name
        how = "HANDOFF" if mode == "handoff" else signal.Signals(stop_signal).name
        step = RestartStep(name, how, instance.pid)
        say(f"restart {n}/{len(instances)}: {how} → {name}")
        step.stop_sent = time.time()
        if mode == "handoff":
            step.started = step.stop_sent
            step.exit_code, step.new_pid = instance.handoff(ready_timeout)
            step.exited = time.time()
        else:
            step.exit_code = instance.stop(stop_signal)
            step.exited = time.time()
            if restart_delay > 0:
                say(f"  {name} exited ({step.exit_code}); down for {restart_delay:g}s")
                sleep_watching(instances, restart_delay)
            step.started = time.time()
            step.new_pid = instance.start()
        step.running = tail.wait_for(
            watching(instances, functools.partial(tail.is_running, step.new_pid, threads)),
            ready_timeout,
            f"{name} (pid {step.new_pid}) RUNNING",
        )
        step.settled = wait_all_running(
            tail, instances, threads, ready_timeout, protocol, broker_settled
        )
        say(
            f"  {name} RUNNING again {step.running - step.stop_sent:.1f}s after the signal "
            f"(exit code {step.exit_code})"
        )
        logger.info("instance restarted", extra=fields(**asdict(step)))
        timeline.steps.append(step)
    timeline.end = time.time()
    return timeline
