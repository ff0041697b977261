"""The FastAPI application one instance serves at its ``application.server``.

Reads are open; the mutating calls (member removal, reload) need ``Authorization: Bearer <token>``
matching ``rest.auth.token``. Every error is a 4xx/5xx with a JSON body ``{error, message}``;
bad input is always a 4xx.
"""

from __future__ import annotations

import hmac
import os
import signal
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

import httpx
from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from streamrt.rest.keys import BadKeyError, parse_key, to_json_value
from streamrt.rest.metrics import registry_for, render_metrics
from streamrt.rest.models import (
    ErrorBody,
    InstancesView,
    InstanceView,
    KeyQueryResponse,
    MemberRemoval,
    RemoveMembersRequest,
    RemoveMembersResponse,
    WindowQueryResponse,
    WindowView,
)
from streamrt.rest.settings import RestSettings
from streamrt.runtime.instance.metadata import StreamsMetadata
from streamrt.runtime.instance.queries import StoreNotReadyError

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("FORWARDED_HEADER", "ApiError", "create_api")

FORWARDED_HEADER = "X-Streamrt-Forwarded"
_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorBody} for s in (400, 401, 403, 404, 502, 503)
}


_MAX_TIME = 2**63 - 1

# module level: the dependency's annotation is resolved from this module's globals
_BEARER = HTTPBearer(auto_error=False)


class ApiError(Exception):
    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


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


def create_api(app: App, settings: RestSettings) -> FastAPI:
    api = FastAPI(
        title="streamrt instance API",
        version="1",
        description="Metadata, interactive queries, static-member removal and metrics of one "
        "instance of a streamrt application.",
    )
    registry = registry_for(app)

    @api.exception_handler(ApiError)
    async def on_api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"error": exc.error, "message": exc.message}, status_code=exc.status)

    def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    ) -> None:
        if settings.auth_token is None:
            raise ApiError(
                403,
                "MUTATIONS_DISABLED",
                "no rest.auth.token (or STREAMRT_REST_TOKEN) is configured on this instance, "
                "so mutating calls are refused",
            )
        if credentials is None:
            raise ApiError(401, "UNAUTHENTICATED", "send Authorization: Bearer <token>")
        if not hmac.compare_digest(credentials.credentials.encode(), settings.auth_token.encode()):
            raise ApiError(403, "FORBIDDEN", "the bearer token is wrong")

    @api.get("/healthz", responses=_ERRORS)
    def healthz() -> dict[str, Any]:
        """200 while the instance runs; 503 once it is in (or going to) ERROR, with why."""
        health = app.health()
        if not health.healthy:
            raise ApiError(503, "FATAL_ERROR", f"{health.state}: {health.reason or 'stopped'}")
        return {
            "status": "ok",
            "instance_id": app.instance_id,
            "state": health.state,
            "threads": health.threads,
            "thread_failures": health.thread_failures,
        }

    @api.get("/v1/instances", response_model=InstancesView)
    def instances() -> InstancesView:
        """Every live instance of the application with its host and group.instance.ids."""
        assert app.config is not None
        return InstancesView(
            application_id=app.config.application_id,
            local_instance_id=app.instance_id,
            instances=[instance_view(m) for m in app.metadata_for_all_clients()],
        )

    @api.get("/v1/metadata", response_model=list[InstanceView])
    def metadata() -> list[InstanceView]:
        """StreamsMetadata of every instance: host, threads, tasks, partitions, stores."""
        return [instance_view(m) for m in app.metadata_for_all_clients()]

    @api.get("/v1/threads")
    def threads() -> list[dict[str, Any]]:
        """This instance's stream threads: state, tasks, member id and counters."""
        out = []
        for t in app.metadata_for_local_threads():
            out.append(
                {
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
            )
        return out

    @api.get("/v1/stores/{store}/keys/{key}", response_model=KeyQueryResponse, responses=_ERRORS)
    def query_key(
        request: Request,
        store: Annotated[str, Path(min_length=1, max_length=249)],
        key: Annotated[str, Path(min_length=1, max_length=1024)],
    ) -> Any:
        """Interactive query: answered from the local store, or forwarded to its owner."""
        spec = app.topology.stores.get(store)
        if spec is None:
            raise ApiError(404, "UNKNOWN_STORE", f"no store named {store!r} in this topology")
        if spec.segments is not None:
            raise ApiError(
                400,
                "WINDOW_STORE",
                f"{store!r} is a window/session store: GET "
                f"/v1/stores/{store}/keys/{{key}}/windows?from=<ms>&to=<ms>",
            )
        try:
            typed = parse_key(spec.key_serde, key)
            owner = app.metadata_for_key(store, typed)
        except BadKeyError as exc:
            raise ApiError(400, "BAD_KEY", str(exc)) from None
        except StoreNotReadyError as exc:
            raise ApiError(503, "NOT_READY", str(exc)) from None
        if owner is None:
            raise ApiError(503, "NOT_READY", "the key's task is not assigned yet; retry")
        if owner.instance_id == app.instance_id:
            try:
                value = app.query_local(store, typed)
            except StoreNotReadyError as exc:
                raise ApiError(503, "NOT_READY", str(exc)) from None
            return KeyQueryResponse(
                store=store,
                key=to_json_value(typed),
                value=to_json_value(value),
                found=value is not None,
                instance_id=app.instance_id,
            )
        if request.headers.get(FORWARDED_HEADER):
            raise ApiError(503, "NOT_READY", "metadata differs between instances; retry")
        if owner.host is None or owner.port is None:
            raise ApiError(
                503, "NO_HOST", f"instance {owner.instance_id} has no application.server"
            )
        return _forward(owner, store, key, settings.forward_timeout_ms / 1000)

    @api.get(
        "/v1/stores/{store}/keys/{key}/windows",
        response_model=WindowQueryResponse,
        responses=_ERRORS,
    )
    def query_windows(
        request: Request,
        store: Annotated[str, Path(min_length=1, max_length=249)],
        key: Annotated[str, Path(min_length=1, max_length=1024)],
        time_from: Annotated[int, Query(alias="from", ge=0)] = 0,
        time_to: Annotated[int, Query(alias="to", ge=0)] = _MAX_TIME,
    ) -> Any:
        """Windowed interactive query: the key's windows whose start is in ``[from, to]``
        (session stores: sessions overlapping it), from the instance owning the key."""
        spec = app.topology.stores.get(store)
        if spec is None:
            raise ApiError(404, "UNKNOWN_STORE", f"no store named {store!r} in this topology")
        if spec.segments is None:
            raise ApiError(
                400, "NOT_A_WINDOW_STORE", f"{store!r} is a key-value store: GET .../keys/{{key}}"
            )
        if time_from > time_to:
            raise ApiError(400, "BAD_RANGE", f"from={time_from} is after to={time_to}")
        try:
            typed = parse_key(spec.key_serde, key)
            owner = app.metadata_for_key(store, typed)
        except BadKeyError as exc:
            raise ApiError(400, "BAD_KEY", str(exc)) from None
        except StoreNotReadyError as exc:
            raise ApiError(503, "NOT_READY", str(exc)) from None
        if owner is None:
            raise ApiError(503, "NOT_READY", "the key's task is not assigned yet; retry")
        if owner.instance_id == app.instance_id:
            try:
                found = app.query_window(store, typed, time_from, time_to)
            except StoreNotReadyError as exc:
                raise ApiError(503, "NOT_READY", str(exc)) from None
            return WindowQueryResponse(
                store=store,
                key=to_json_value(typed),
                time_from=time_from,
                time_to=time_to,
                windows=[WindowView(start=s, end=e, value=to_json_value(v)) for s, e, v in found],
                instance_id=app.instance_id,
            )
        if request.headers.get(FORWARDED_HEADER):
            raise ApiError(503, "NOT_READY", "metadata differs between instances; retry")
        if owner.host is None or owner.port is None:
            raise ApiError(
                503, "NO_HOST", f"instance {owner.instance_id} has no application.server"
            )
        path = f"{quote(key, safe='')}/windows?from={time_from}&to={time_to}"
        return _forward(owner, store, path, settings.forward_timeout_ms / 1000, quoted=True)

    @api.post(
        "/v1/members:remove",
        response_model=RemoveMembersResponse,
        responses=_ERRORS,
        dependencies=[Depends(require_token)],
    )
    def remove_members(body: RemoveMembersRequest) -> RemoveMembersResponse:
        """Remove static members now (batch LeaveGroup) instead of after session.timeout.ms."""
        assert app.config is not None
        try:
            results = app.remove_members(body.instance_ids)
        except Exception as exc:
            raise ApiError(502, "ADMIN_FAILED", f"the group coordinator refused: {exc}") from None
        return RemoveMembersResponse(
            group_id=app.config.application_id,
            results=[
                MemberRemoval(
                    group_instance_id=i,
                    removed=e is None,
                    error=None if e is None else e.code.name.upper(),
                )
                for i, e in results.items()
            ],
        )

    @api.post(
        "/v1/reload",
        status_code=202,
        responses={**_ERRORS, 409: {"model": ErrorBody}},
        dependencies=[Depends(require_token)],
    )
    def reload() -> dict[str, Any]:
        """Reload in place: as ``kill -HUP``, start a successor from the current code that
        takes over through the hand-off socket (``streamrt run`` only)."""
        handler = signal.getsignal(signal.SIGHUP)
        if not callable(handler):  # SIG_DFL would kill the process, SIG_IGN would do nothing
            raise ApiError(
                409,
                "RELOAD_UNSUPPORTED",
                "this process does not reload on SIGHUP: run it with `streamrt run` and "
                "group.instance.id (static membership)",
            )
        os.kill(os.getpid(), signal.SIGHUP)
        return {"status": "reloading", "pid": os.getpid()}

    @api.get("/metrics", response_class=Response)
    def metrics() -> Response:
        """Prometheus text format: thread states, records processed, rebalances, restores."""
        return Response(render_metrics(registry), media_type="text/plain; version=0.0.4")

    return api


def _forward(
    owner: StreamsMetadata, store: str, key: str, timeout: float, *, quoted: bool = False
) -> JSONResponse:
    url = f"http://{owner.host}:{owner.port}/v1/stores/{quote(store, safe='')}/keys/"
    url += key if quoted else quote(key, safe="")
    try:
        response = httpx.get(url, headers={FORWARDED_HEADER: "1"}, timeout=timeout)
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ApiError(
            502, "FORWARD_FAILED", f"instance {owner.instance_id} at {url}: {exc!r}"
        ) from None
    return JSONResponse(body, status_code=response.status_code)
