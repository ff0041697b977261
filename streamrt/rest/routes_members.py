"""The mutating calls: static-member removal and reload. Both need the bearer token."""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends

from streamrt.rest.auth import require_token
from streamrt.rest.errors import ERROR_RESPONSES, ApiError
from streamrt.rest.models import (
    ErrorBody,
    MemberRemoval,
    RemoveMembersRequest,
    RemoveMembersResponse,
)
from streamrt.rest.settings import RestSettings

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("MemberRoutes",)


class MemberRoutes:
    """``POST /v1/members:remove`` and ``POST /v1/reload``."""

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
        return router

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

    def reload(self) -> dict[str, Any]:
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
