"""Rolling deploys of local instances, and the report of what they cost.

``run_scenario`` runs the whole benchmark scenario; ``rolling_restart`` is the driver on its
own, for instances started as :class:`LocalInstance` processes and followed by an
:class:`EventTail` over ``<application.id>-events``.
"""

from streamrt.deploy.event_tail import EventTail
from streamrt.deploy.processes import InstanceSpec, LocalInstance
from streamrt.deploy.report import DeployReport
from streamrt.deploy.rolling import RestartStep, Timeline, rolling_restart, wait_all_running
from streamrt.deploy.scenario import ScenarioConfig, run_scenario

__all__ = (
    "DeployReport",
    "EventTail",
    "InstanceSpec",
    "LocalInstance",
    "RestartStep",
    "ScenarioConfig",
    "Timeline",
    "rolling_restart",
    "run_scenario",
    "wait_all_running",
)
