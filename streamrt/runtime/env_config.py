"""Settings from ``STREAMRT_*`` environment variables, read only for keys streamrt knows.

``STREAMRT_APPLICATION_ID=x`` is ``application.id=x``. Any other ``STREAMRT_*`` variable
(a tool's own, such as ``STREAMRT_CACHE_DIR``, or one a user's tooling sets) used to become a
config key too, and every app then refused to start with "unknown config key". A variable
is now read only when its key is a setting (:func:`streamrt.runtime.config.is_setting_key`,
or one of ``also``: the REST keys ``streamrt run`` adds); the project's own tool variables
are skipped silently, anything else is logged once, by name, and skipped.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Mapping

from streamrt.logs import fields
from streamrt.runtime.config import is_setting_key

__all__ = ("ENV_PREFIX", "TOOL_VARIABLES", "read_env")

logger = logging.getLogger(__name__)

ENV_PREFIX = "STREAMRT_"
#: ``STREAMRT_*`` variables of streamrt's tools and tests, never an app's settings.
TOOL_VARIABLES = frozenset(
    {
        "STREAMRT_CACHE_DIR",  # downloaded jars (streamrt.dev, streamrt.spark)
        "STREAMRT_REST_URL",  # the REST CLIs' default --url
        "STREAMRT_SCREENSHOTS",  # the console test's screenshot directory
        "STREAMRT_CHROMIUM_LOG",  # the console test's browser output
    }
)
_warned: set[str] = set()


def read_env(
    environ: Mapping[str, str] | None = None, *, also: Collection[str] = (), warn: bool = True
) -> dict[str, str]:
    """``STREAMRT_APPLICATION_ID=x`` → ``{"application.id": "x"}``; unknown variables are
    skipped (logged once each when ``warn``)."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or name in TOOL_VARIABLES:
            continue
        key = name[len(ENV_PREFIX) :].lower().replace("_", ".")
        if is_setting_key(key) or key in also:
            out[key] = value
        elif warn and name not in _warned:
            _warned.add(name)
            logger.warning(
                f"ignoring environment variable {name}: {key!r} is not a streamrt setting",
                extra=fields(variable=name),
            )
    return out
