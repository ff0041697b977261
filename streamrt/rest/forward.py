"""Forwarding an interactive query to the instance that owns the key.

The owner's address comes from StreamsMetadata (the assignment, or the signed host directory),
already checked to be a bare ``host:port``; the path is built here with every caller-supplied
part quoted, and a forwarded request is marked so it is never forwarded twice.
"""

from __future__ import annotations

from urllib.parse import quote

import httpx
from fastapi.responses import JSONResponse

from streamrt.rest.errors import ApiError
from streamrt.runtime.instance.metadata import StreamsMetadata

__all__ = ("FORWARDED_HEADER", "forward")

FORWARDED_HEADER = "X-Streamrt-Forwarded"


def forward(
    owner: StreamsMetadata, store: str, key: str, timeout: float, *, quoted: bool = False
) -> JSONResponse:
    """GET ``/v1/stores/{store}/keys/{key}`` on ``owner`` and answer what it answered."""
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
