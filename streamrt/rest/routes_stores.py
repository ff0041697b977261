"""Interactive queries: a key (or a key's windows) read where it lives.

The instance that owns the key's task answers from its store; another instance forwards the
request once (marked with :data:`~streamrt.rest.forward.FORWARDED_HEADER`) to the owner's
``application.server``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request

from streamrt.errors import StreamrtError
from streamrt.rest.errors import ERROR_RESPONSES, ApiError
from streamrt.rest.forward import FORWARDED_HEADER, forward
from streamrt.rest.keys import BadKeyError, parse_key, to_json_value
from streamrt.rest.models import KeyQueryResponse, WindowQueryResponse, WindowView
from streamrt.rest.settings import RestSettings
from streamrt.runtime.instance.metadata import StreamsMetadata
from streamrt.runtime.instance.queries import StoreNotReadyError
from streamrt.runtime.stores import StoreSpec

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("StoreRoutes",)

T = TypeVar("T")
_MAX_TIME = 2**63 - 1
StoreName = Annotated[str, Path(min_length=1, max_length=249)]
KeyText = Annotated[str, Path(min_length=1, max_length=1024)]


class StoreRoutes:
    """``GET /v1/stores/{store}/keys/{key}`` and ``.../windows``."""

    def __init__(self, app: App, settings: RestSettings) -> None:
        self.app = app
        self.timeout = settings.forward_timeout_ms / 1000

    def router(self) -> APIRouter:
        router = APIRouter()
        router.add_api_route(
            "/v1/stores/{store}/keys/{key}",
            self.query_key,
            response_model=KeyQueryResponse,
            responses=ERROR_RESPONSES,
        )
        router.add_api_route(
            "/v1/stores/{store}/keys/{key}/windows",
            self.query_windows,
            response_model=WindowQueryResponse,
            responses=ERROR_RESPONSES,
        )
        return router

    def query_key(self, request: Request, store: StoreName, key: KeyText) -> Any:
        """Interactive query: answered from the local store, or forwarded to its owner (a
        global table's store is whole on every instance: always answered here)."""
        if store in self.app.topology.global_tables:
            return self._query_global(store, key)
        typed, owner = self._locate(self._spec(store, windowed=False), store, key)
        if owner.instance_id != self.app.instance_id:
            return forward(self._remote(request, owner), store, key, self.timeout)
        value = _ready(lambda: self.app.query_local(store, typed))
        return self._answer(store, typed, value)

    def query_windows(
        self,
        request: Request,
        store: StoreName,
        key: KeyText,
        time_from: Annotated[int, Query(alias="from", ge=0)] = 0,
        time_to: Annotated[int, Query(alias="to", ge=0)] = _MAX_TIME,
    ) -> Any:
        """Windowed interactive query: the key's windows whose start is in ``[from, to]``
        (session stores: sessions overlapping it), from the instance owning the key."""
        spec = self._spec(store, windowed=True)
        if time_from > time_to:
            raise ApiError(400, "BAD_RANGE", f"from={time_from} is after to={time_to}")
        typed, owner = self._locate(spec, store, key)
        if owner.instance_id != self.app.instance_id:
            path = f"{quote(key, safe='')}/windows?from={time_from}&to={time_to}"
            owner = self._remote(request, owner)
            return forward(owner, store, path, self.timeout, quoted=True)
        found = _ready(lambda: self.app.query_window(store, typed, time_from, time_to))
        return WindowQueryResponse(
            store=store,
            key=to_json_value(typed),
            time_from=time_from,
            time_to=time_to,
            windows=[WindowView(start=s, end=e, value=to_json_value(v)) for s, e, v in found],
            instance_id=self.app.instance_id,
        )

    def _answer(self, store: str, key: Any, value: Any) -> KeyQueryResponse:
        return KeyQueryResponse(
            store=store,
            key=to_json_value(key),
            value=to_json_value(value),
            found=value is not None,
            instance_id=self.app.instance_id,
        )

    def _query_global(self, store: str, key: str) -> KeyQueryResponse:
        """A global table's store, read here; 503 until the global thread runs it."""
        table = self.app.topology.global_tables[store]
        try:
            typed = parse_key(table.key_serde, key)
        except BadKeyError as exc:
            raise ApiError(400, "BAD_KEY", str(exc)) from None
        try:
            value = self.app.query_local(store, typed)
        except StreamrtError as exc:
            raise ApiError(503, "NOT_READY", str(exc)) from None
        return self._answer(store, typed, value)

    def _spec(self, store: str, *, windowed: bool) -> StoreSpec:
        """The store's spec; 4xx for an unknown store or the wrong kind of query."""
        if windowed and store in self.app.topology.global_tables:
            raise ApiError(
                400, "NOT_A_WINDOW_STORE", f"{store!r} is a global table: GET .../keys/{{key}}"
            )
        spec = self.app.topology.stores.get(store)
        if spec is None:
            raise ApiError(404, "UNKNOWN_STORE", f"no store named {store!r} in this topology")
        if windowed and spec.segments is None:
            raise ApiError(
                400, "NOT_A_WINDOW_STORE", f"{store!r} is a key-value store: GET .../keys/{{key}}"
            )
        if not windowed and spec.segments is not None:
            raise ApiError(
                400,
                "WINDOW_STORE",
                f"{store!r} is a window/session store: GET "
                f"/v1/stores/{store}/keys/{{key}}/windows?from=<ms>&to=<ms>",
            )
        return spec

    def _locate(self, spec: StoreSpec, store: str, key: str) -> tuple[Any, StreamsMetadata]:
        """The typed key and the instance owning it; 400 for a key the store cannot have."""
        try:
            typed = parse_key(spec.key_serde, key)
        except BadKeyError as exc:
            raise ApiError(400, "BAD_KEY", str(exc)) from None
        owner = _ready(lambda: self.app.metadata_for_key(store, typed))
        if owner is None:
            raise ApiError(503, "NOT_READY", "the key's task is not assigned yet; retry")
        return typed, owner

    def _remote(self, request: Request, owner: StreamsMetadata) -> StreamsMetadata:
        """The owner to forward to; 503 when this request was forwarded already or no host."""
        if request.headers.get(FORWARDED_HEADER):
            raise ApiError(503, "NOT_READY", "metadata differs between instances; retry")
        if owner.host is None or owner.port is None:
            raise ApiError(
                503, "NO_HOST", f"instance {owner.instance_id} has no application.server"
            )
        return owner


def _ready(read: Callable[[], T]) -> T:
    """``read()``, a store or assignment not ready yet answered as 503."""
    try:
        return read()
    except StoreNotReadyError as exc:
        raise ApiError(503, "NOT_READY", str(exc)) from None
