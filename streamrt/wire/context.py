"""What a request handler knows about the request besides its body."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ("RequestContext",)


@dataclasses.dataclass(frozen=True, slots=True)
class RequestContext:
    """Header fields and peer of one request.

    ``client_host`` is formatted as Kafka's ``InetAddress.toString()`` does: ``"/127.0.0.1"``.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    client_host: str
    # security (streamrt.broker.security): who is asking, on which listener; ``auth`` is the
    # connection's mutable SASL state, used only by SaslHandshake/SaslAuthenticate.
    listener: str = "PLAINTEXT"
    principal: str = "User:ANONYMOUS"
    auth: Any = None
