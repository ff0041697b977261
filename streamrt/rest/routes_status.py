"""Health, cluster metadata, local threads and metrics: the read-only view of an instance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from fastapi.responses import Response

from streamrt.rest.errors import ERROR_RESPONSES, ApiError
from streamrt.rest.metrics import registry_for, render_metrics
from streamrt.rest.models import InstancesView, InstanceView
from streamrt.runtime.instance.metadata import StreamsMetadata
from streamrt.runtime.metadata import ThreadMetadata

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("StatusRoutes", "instance_view")


def instance_view(m: StreamsMetadata) -> InstanceView:
    return InstanceView(
        instance_id=m.instance_id,
        application_server=f"{m.host}:{m.port}" if m.host else None,
        host=m.host,
        port=m.port,
        group_instance_ids=list(m.thread_instance_ids),
        tasks=list(m.tasks),
        topic_partitions=list(m.topic_partitions),
        state_store_names=list(m.state_store_names),
    )


def thread_view(t: ThreadMetadata) -> dict[str, Any]:
    return {
        "thread_name": t.thread_name,
        "group_instance_id": t.thread_instance_id,
        "member_id": t.member_id,
        "client_id": t.client_id,
        "state": t.state.value,
        "active_tasks": list(t.active_tasks),
        "restoring_tasks": list(t.restoring_tasks),
        "standby_tasks": list(t.standby_tasks),
        "standby_lags": dict(t.standby_lags),
        "topic_partitions": [list(p) for p in t.topic_partitions],
        "rebalances": t.rebalances,
        "records_processed": t.records_processed,
        "records_restored": t.records_restored,
        "bytes_restored": t.bytes_restored,
    }


class StatusRoutes:
    """``/healthz``, ``/v1/instances``, ``/v1/metadata``, ``/v1/threads``, ``/metrics``."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.registry = registry_for(app)

    def router(self) -> APIRouter:
        router = APIRouter()
        router.add_api_route("/healthz", self.healthz, responses=ERROR_RESPONSES)
        router.add_api_route("/v1/instances", self.instances, response_model=InstancesView)
        router.add_api_route("/v1/metadata", self.metadata, response_model=list[InstanceView])
        router.add_api_route("/v1/threads", self.threads)
        router.add_api_route("/metrics", self.metrics, response_class=Response)
        return router

    def healthz(self) -> dict[str, Any]:
        """200 while the instance runs; 503 once it is in (or going to) ERROR, with why."""
        health = self.app.health()
        if not health.healthy:
            raise ApiError(503, "FATAL_ERROR", f"{health.state}: {health.reason or 'stopped'}")
        return {
            "status": "ok",
            "instance_id": self.app.instance_id,
            "state": health.state,
            "threads": health.threads,
            "thread_failures": health.thread_failures,
        }

    def instances(self) -> InstancesView:
        """Every live instance of the application with its host and group.instance.ids."""
        assert self.app.config is not None
        return InstancesView(
            application_id=self.app.config.application_id,
            local_instance_id=self.app.instance_id,
            instances=[instance_view(m) for m in self.app.metadata_for_all_clients()],
        )

    def metadata(self) -> list[InstanceView]:
        """StreamsMetadata of every instance: host, threads, tasks, partitions, stores."""
        return [instance_view(m) for m in self.app.metadata_for_all_clients()]

    def threads(self) -> list[dict[str, Any]]:
        """This instance's stream threads: state, tasks, member id and counters."""
        return [thread_view(t) for t in self.app.metadata_for_local_threads()]

    def metrics(self) -> Response:
        """Prometheus text format: thread states, records processed, rebalances, restores."""
        return Response(render_metrics(self.registry), media_type="text/plain; version=0.0.4")
