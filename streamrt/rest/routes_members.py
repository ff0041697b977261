"""The mutating calls: static-member removal, reload, one more stream thread. All need the
bearer token.

A reload may name another instance (``?instance_id=web-2``, as the console's buttons do): it is
forwarded to that instance's ``/v1/reload`` with the caller's own ``Authorization`` header,
which that instance checks against its token.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Annotated, Any

import httpx
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from streamrt.rest.auth import require_token
from streamrt.rest.errors import ERROR_RESPONSES, ApiError
from streamrt.rest.forward import FORWARDED_HEADER
from streamrt.rest.models import (
    ErrorBody,
    InstanceIdText,
    MemberRemoval,
    RemoveMembersRequest,
    RemoveMembersResponse,
)
from streamrt.rest.settings import RestSettings

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("MemberRoutes",)


class MemberRoutes:
    """``POST /v1/members:remove``, ``POST /v1/reload`` and ``POST /v1/threads:add``."""

    def __init__(self, app: App, settings: RestSettings) -> None:
        self.app = app
        self.settings = settings

    def router(self) -> APIRouter:
        router = APIRouter(dependencies=[Depends(require_token(self.settings))])
        router.add_api_route(
            "/v1/members:remove",
            self.remove_members,
            methods=["POST"],
            response_model=RemoveMembersResponse,
            responses=ERROR_RESPONSES,
        )
        router.add_api_route(
            "/v1/reload",
            self.reload,
            methods=["POST"],
            status_code=202,
            responses={**ERROR_RESPONSES, 409: {"model": ErrorBody}},
        )
        router.add_api_route(
            "/v1/threads:add",
            self.add_thread,
            methods=["POST"],
            status_code=201,
            responses={**ERROR_RESPONSES, 409: {"model": ErrorBody}},
        )
        return router

    def add_thread(self) -> dict[str, Any]:
        """Start one more stream thread in this instance, as Kafka Streams' addStreamThread
        (``num.stream.threads`` raised at run time from outside the process)."""
        try:
            index = self.app.add_stream_thread()
        except Exception as exc:
            raise ApiError(409, "THREAD_NOT_ADDED", f"no thread added: {exc}") from None
        return {"thread_index": index}

    def remove_members(self, body: RemoveMembersRequest) -> RemoveMembersResponse:
        """Remove static members now (batch LeaveGroup) instead of after session.timeout.ms."""
        assert self.app.config is not None
        try:
            results = self.app.remove_members(body.instance_ids)
        except Exception as exc:
            raise ApiError(502, "ADMIN_FAILED", f"the group coordinator refused: {exc}") from None
        return RemoveMembersResponse(
            group_id=self.app.config.application_id,
            results=[
                MemberRemoval(
                    group_instance_id=i,
                    removed=e is None,
                    error=None if e is None else e.code.name.upper(),
                )
                for i, e in results.items()
            ],
        )

    def reload(
        self,
        request: Request,
        instance_id: Annotated[InstanceIdText | None, Query()] = None,
    ) -> Any:
        """Reload in place: as ``kill -HUP``, start a successor from the current code that
        takes over through the hand-off socket (``streamrt run`` only). ``instance_id``:
        reload that instance of the application instead (forwarded to it)."""
        if instance_id is not None and instance_id != self.app.instance_id:
            return self._forward_reload(instance_id, request.headers.get("authorization", ""))
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

    def _forward_reload(self, instance_id: str, authorization: str) -> JSONResponse:
        owner = next(
            (m for m in self.app.metadata_for_all_clients() if m.instance_id == instance_id),
            None,
        )
        if owner is None or not owner.host:
            raise ApiError(404, "UNKNOWN_INSTANCE", f"{instance_id} is not a running instance")
        url = f"http://{owner.host}:{owner.port}/v1/reload"
        headers = {"Authorization": authorization, FORWARDED_HEADER: "1"}
        try:
            response = httpx.post(
                url, headers=headers, timeout=self.settings.forward_timeout_ms / 1000
            )
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ApiError(502, "FORWARD_FAILED", f"instance {instance_id}: {exc!r}") from None
        return JSONResponse(body, status_code=response.status_code)
