"""REST settings: streamrt's own ``rest.*`` keys, kept apart from Kafka Streams' config.

``rest.auth.token`` (or env ``STREAMRT_REST_TOKEN``) is the bearer token mutating calls need;
without one, mutating calls are refused rather than left open. ``rest.bind.address`` is the
interface to listen on (default 127.0.0.1: advertise ``application.server`` but expose nothing
beyond the host unless asked).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamrt.errors import ConfigError

__all__ = ("REST_PREFIX", "TOKEN_ENV", "RestSettings")

REST_PREFIX = "rest."
TOKEN_ENV = "STREAMRT_REST_TOKEN"
_KNOWN = ("rest.auth.token", "rest.bind.address", "rest.forward.timeout.ms")
# What ``streamrt run`` makes of STREAMRT_REST_TOKEN / STREAMRT_REST_URL (the CLI's default
# --url): the first is the token under another name, the second is not for the instance.
_ENV_SPELLINGS = ("rest.token", "rest.url")


@dataclass(frozen=True, slots=True)
class RestSettings:
    auth_token: str | None = None
    bind_address: str = "127.0.0.1"
    forward_timeout_ms: int = 10_000

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
        try:
            timeout = int(rest.get("rest.forward.timeout.ms", 10_000))
        except (TypeError, ValueError):
            raise ConfigError("rest.forward.timeout.ms must be an integer") from None
        if timeout < 1:
            raise ConfigError("rest.forward.timeout.ms must be positive")
        return cls(
            auth_token=str(token) if token else None,
            bind_address=str(rest.get("rest.bind.address", "127.0.0.1")),
            forward_timeout_ms=timeout,
        )
