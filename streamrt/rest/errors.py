"""The REST API's one error shape: a 4xx/5xx with a JSON body ``{error, message}``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from streamrt.rest.models import ErrorBody

__all__ = ("ERROR_RESPONSES", "ApiError", "error_response", "on_api_error")

# the error statuses every operation documents in the OpenAPI document
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorBody} for s in (400, 401, 403, 404, 413, 502, 503)
}


class ApiError(Exception):
    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


def error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse({"error": exc.error, "message": exc.message}, status_code=exc.status)


async def on_api_error(_request: Request, exc: Exception) -> JSONResponse:
    """FastAPI exception handler for :class:`ApiError`."""
    assert isinstance(exc, ApiError)
    return error_response(exc)
