"""REST settings: streamrt's own ``rest.*`` keys, kept apart from Kafka Streams' config.

``rest.auth.token`` (or env ``STREAMRT_REST_TOKEN``) is the bearer token mutating calls need;
without one, mutating calls are refused rather than left open. ``rest.bind.address`` is the
interface to listen on (default 127.0.0.1: advertise ``application.server`` but expose nothing
beyond the host unless asked). ``rest.max.request.bytes`` caps a request body (413 above it;
default 1 MiB, as the largest legal body, 100 member ids, is about 25 KiB).
``rest.directory.secret`` signs and checks the host directory's records (default: the token;
see :mod:`streamrt.rest.host_records`) and, when set, the console's lifecycle events
(:mod:`streamrt.rest.event_trust`). ``rest.header.timeout.ms`` / ``rest.body.timeout.ms``
bound how long a client may take to send a request's headers / each part of its body (a
slow client otherwise holds a connection forever). ``rest.console.timeline.max.bytes`` caps
the memory the console's event follower keeps, ``rest.console.event.max.bytes`` one event.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamrt.errors import ConfigError

__all__ = ("ENV_KEYS", "REST_PREFIX", "TOKEN_ENV", "RestSettings")

REST_PREFIX = "rest."
TOKEN_ENV = "STREAMRT_REST_TOKEN"
_KNOWN = (
    "rest.auth.token",
    "rest.bind.address",
    "rest.forward.timeout.ms",
    "rest.max.request.bytes",
    "rest.directory.secret",
    "rest.header.timeout.ms",
    "rest.body.timeout.ms",
    "rest.console.timeline.max.bytes",
    "rest.console.event.max.bytes",
)
# What ``streamrt run`` makes of STREAMRT_REST_TOKEN / STREAMRT_REST_URL (the CLI's default
# --url): the first is the token under another name, the second is not for the instance.
_ENV_SPELLINGS = ("rest.token", "rest.url")
#: The ``rest.*`` keys ``streamrt run`` reads from ``STREAMRT_*`` variables.
ENV_KEYS = frozenset({*_KNOWN, "rest.token"})
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
DEFAULT_HEADER_TIMEOUT_MS = 10_000
DEFAULT_BODY_TIMEOUT_MS = 30_000
DEFAULT_TIMELINE_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_EVENT_MAX_BYTES = 64 * 1024


def _positive_int(rest: Mapping[str, Any], key: str, default: int) -> int:
    try:
        value = int(rest.get(key, default))
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be an integer") from None
    if value < 1:
        raise ConfigError(f"{key} must be positive")
    return value


@dataclass(frozen=True, slots=True)
class RestSettings:
    auth_token: str | None = None
    bind_address: str = "127.0.0.1"
    forward_timeout_ms: int = 10_000
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    directory_secret: str | None = None
    header_timeout_ms: int = DEFAULT_HEADER_TIMEOUT_MS
    body_timeout_ms: int = DEFAULT_BODY_TIMEOUT_MS
    timeline_max_bytes: int = DEFAULT_TIMELINE_MAX_BYTES
    event_max_bytes: int = DEFAULT_EVENT_MAX_BYTES

    @property
    def host_directory_key(self) -> str | None:
        """The secret host-directory records are signed with: its own, else the token."""
        return self.directory_secret or self.auth_token

    @classmethod
    def from_mapping(
        cls, values: Mapping[str, Any], environ: Mapping[str, str] | None = None
    ) -> RestSettings:
        """Pick the ``rest.*`` keys of an app's settings; refuse unknown ``rest.*`` keys."""
        env = os.environ if environ is None else environ
        rest = {k: v for k, v in values.items() if k.startswith(REST_PREFIX) and v is not None}
        unknown = sorted(set(rest) - set(_KNOWN) - set(_ENV_SPELLINGS))
        if unknown:
            raise ConfigError(f"unknown config key(s) {', '.join(unknown)}")
        token = rest.get("rest.auth.token") or rest.get("rest.token") or env.get(TOKEN_ENV)
        secret = rest.get("rest.directory.secret")
        return cls(
            auth_token=str(token) if token else None,
            bind_address=str(rest.get("rest.bind.address", "127.0.0.1")),
            forward_timeout_ms=_positive_int(rest, "rest.forward.timeout.ms", 10_000),
            max_request_bytes=_positive_int(
                rest, "rest.max.request.bytes", DEFAULT_MAX_REQUEST_BYTES
            ),
            directory_secret=str(secret) if secret else None,
            header_timeout_ms=_positive_int(
                rest, "rest.header.timeout.ms", DEFAULT_HEADER_TIMEOUT_MS
            ),
            body_timeout_ms=_positive_int(rest, "rest.body.timeout.ms", DEFAULT_BODY_TIMEOUT_MS),
            timeline_max_bytes=_positive_int(
                rest, "rest.console.timeline.max.bytes", DEFAULT_TIMELINE_MAX_BYTES
            ),
            event_max_bytes=_positive_int(
                rest, "rest.console.event.max.bytes", DEFAULT_EVENT_MAX_BYTES
            ),
        )
