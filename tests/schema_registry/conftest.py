"""A real schema registry for the registry serde tests: Apicurio Registry from Maven Central.

One JVM per session (a start costs 20-30 s); a test that stops it (registry down) gets it
restarted for the next one. No java or no Maven Central: the tests skip with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from streamrt.dev.apicurio import ApicurioRegistry, RegistryUnavailable


@pytest.fixture(scope="session")
def _registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApicurioRegistry]:
    registry = ApicurioRegistry(tmp_path_factory.mktemp("apicurio"))
    try:
        registry.start()
    except RegistryUnavailable as exc:
        pytest.skip(f"schema registry unavailable: {exc}")
    try:
        yield registry
    finally:
        registry.stop()


@pytest.fixture
def registry(_registry: ApicurioRegistry) -> ApicurioRegistry:
    """The session's registry, running (restarted if an earlier test stopped it)."""
    if not _registry.running():
        _registry.start()
    return _registry


@pytest.fixture
def serde_config(registry: ApicurioRegistry) -> dict[str, Any]:
    """Registry serde settings for a test: fail fast when the registry is down."""
    return {
        "schema.registry.url": registry.url,
        "schema.registry.max.retries": 0,
        "schema.registry.timeout": 5,
    }


@pytest.fixture
def subject_topic() -> str:
    """A topic name no other test used: its subjects are fresh in the shared registry."""
    return f"t-{uuid.uuid4().hex[:10]}"
