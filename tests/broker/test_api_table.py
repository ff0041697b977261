"""The dispatch table: one source for ApiVersions and routing, and how a handler family plugs in."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path
from typing import Any

import pytest

from streamrt.admin.connection import BrokerConnection
from streamrt.broker.config import BrokerConfig
from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.embedded import BrokerThread
from streamrt.broker.handlers import FAMILIES, build_api_table, quotas
from streamrt.broker.log import LogManager
from streamrt.broker.metrics import BrokerMetrics
from streamrt.broker.server import KafkaServer
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.client_codec import kio_versions
from streamrt.wire.context import RequestContext


def test_api_versions_advertises_what_is_routed_and_kio_can_decode(broker: BrokerThread) -> None:
    async def scenario() -> dict[int, tuple[int, int]]:
        conn = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            return conn.broker_versions
        finally:
            await conn.close()

    advertised = asyncio.run(scenario())
    assert broker.broker is not None and broker.broker.core is not None
    table = build_api_table(broker.broker.core)
    assert advertised == {k: (lo, hi) for k, lo, hi in table.ranges()}
    for key, (lo, hi) in advertised.items():
        kio = kio_versions(key)
        assert kio.start <= lo <= hi < kio.stop, ApiKey(key).name


def test_registering_a_key_twice_is_refused() -> None:
    table = ApiTable()

    async def handler(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
        return None

    table.register(ApiKey.DESCRIBE_PRODUCERS, 0, 0, handler)
    with pytest.raises(ValueError, match="DESCRIBE_PRODUCERS is registered twice"):
        table.register(ApiKey.DESCRIBE_PRODUCERS, 0, 0, handler)
    assert table.get(4) is None  # a number Kafka 4.x does not define


def _new_family() -> types.ModuleType:
    """What a new handler module looks like: a ``register(table, core)`` function."""
    family = types.ModuleType("quotas")

    async def describe_client_quotas(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
        if req.strict:
            raise RuntimeError("a bug in a handler")
        return respond(ctx, throttle_time=0, error_code=0, error_message=None, entries=[])

    async def alter_client_quotas(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
        return respond(ctx, throttle_time=0, entries=[])

    def register(table: ApiTable, core: BrokerCore) -> None:
        table.register(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, describe_client_quotas)
        table.register(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, alter_client_quotas)

    family.register = register  # type: ignore[attr-defined]
    return family


def test_a_new_family_is_advertised_and_routed_and_a_failing_handler_gets_an_error(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        config = BrokerConfig()
        logs = LogManager(tmp_path, config)
        logs.load()
        core = BrokerCore(config=config, logs=logs, host="127.0.0.1", port=0, cluster_id="c")
        others = tuple(f for f in FAMILIES if f is not quotas)  # the fake replaces quotas
        table = build_api_table(core, (*others, _new_family()))
        server = KafkaServer(core, table, BrokerMetrics())
        port = await server.start("127.0.0.1", 0)
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            assert conn.broker_versions[ApiKey.DESCRIBE_CLIENT_QUOTAS] == (0, 1)
            described = await conn.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, components=[], strict=False)
            assert described.error_code == ErrorCode.none
            altered = await conn.call(ApiKey.ALTER_CLIENT_QUOTAS, entries=[], validate_only=False)
            assert altered.entries == ()
            # Kafka answers an unexpected failure with UNKNOWN_SERVER_ERROR and keeps serving.
            failed = await conn.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, components=[], strict=True)
            assert failed.error_code == ErrorCode.unknown_server_error
            again = await conn.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, components=[], strict=False)
            assert again.error_code == ErrorCode.none
        finally:
            await conn.close()
            await server.stop()
            logs.close()

    asyncio.run(scenario())
