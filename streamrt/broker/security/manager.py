"""The broker's security state: listeners, credential and ACL stores, the authorizer.

Built once from the broker config and data directory; handlers reach it as
``core.security`` and ask :func:`streamrt.broker.security.authorize`.
"""

from __future__ import annotations

import functools
import logging
import secrets
import ssl
from pathlib import Path
from typing import Any

from streamrt.broker.config import BROKER_CONFIGS, BrokerConfig
from streamrt.broker.security.acls import AclOperation, ResourceType
from streamrt.broker.security.authorizer import Authorizer, parse_super_users
from streamrt.broker.security.listeners import (
    Listener,
    certificate_principal,
    parse_listeners,
    server_ssl_context,
)
from streamrt.broker.security.sasl import ANONYMOUS, ConnectionAuth, constant_time_equal
from streamrt.broker.security.stores import AclStore, ScramCredentialStore
from streamrt.client_config import parse_jaas_config
from streamrt.errors import ConfigError
from streamrt.security.scram import (
    MECHANISMS,
    ScramCredential,
    ScramMechanism,
    credential_from_password,
    verify_password,
)

__all__ = ("AUTHORIZER_CLASSES", "BrokerSecurity")


@functools.cache
def _dummy_credential() -> tuple[ScramMechanism, ScramCredential]:
    mech = next(iter(MECHANISMS.values()))
    return mech, credential_from_password(mech, secrets.token_hex(16))


logger = logging.getLogger(__name__)

AUTHORIZER_CLASSES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
    "streamrt",
)
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class BrokerSecurity:
    def __init__(self, config: BrokerConfig, data_dir: Path) -> None:
        self.config = config
        self.credentials = ScramCredentialStore(data_dir / "security" / "scram-credentials.json")
        self.acls = AclStore(data_dir / "security" / "acls.json")
        cls = config["authorizer.class.name"].strip()
        if cls and cls not in AUTHORIZER_CLASSES:
            raise ConfigError(
                f"authorizer.class.name={cls!r}: expected empty (no authorization) or one of "
                + ", ".join(AUTHORIZER_CLASSES)
            )
        self.authorizer: Authorizer | None = (
            Authorizer(
                self.acls.bindings,
                super_users=parse_super_users(config["super.users"]),
                allow_if_no_acl=config["allow.everyone.if.no.acl.found"],
            )
            if cls
            else None
        )
        self._ssl: dict[str, ssl.SSLContext] = {}
        self._plain_users: dict[str, dict[str, str]] = {}

    def listeners(self, host: str, port: int) -> list[Listener]:
        """``listeners`` when set, else the single PLAINTEXT ``host:port`` (the default)."""
        raw = self.config.raw("listeners")
        if raw == BROKER_CONFIGS["listeners"].default:
            return [Listener("PLAINTEXT", "PLAINTEXT", host, port)]
        out = parse_listeners(raw, self.config["listener.security.protocol.map"])
        for listener in out:
            if listener.uses_ssl:
                self._ssl[listener.name] = server_ssl_context(
                    lambda key, lst=listener: self.config.listener_value(lst.name, key), listener
                )
            if listener.uses_sasl:
                mechs = self.mechanisms(listener.name)
                if not mechs:
                    raise ConfigError(f"listener {listener.name}: sasl.enabled.mechanisms is empty")
                self._plain_users[listener.name] = self._jaas_plain_users(listener.name)
        return out

    def ssl_context(self, listener: Listener) -> ssl.SSLContext | None:
        return self._ssl.get(listener.name)

    def mechanisms(self, listener: str) -> tuple[str, ...]:
        raw = self.config.listener_value(listener, "sasl.enabled.mechanisms")
        mechs = tuple(m.strip().upper() for m in str(raw).split(",") if m.strip())
        for m in mechs:
            if m not in SUPPORTED_MECHANISMS:
                raise ConfigError(
                    f"sasl.enabled.mechanisms: {m} is not supported "
                    f"(supported: {', '.join(SUPPORTED_MECHANISMS)})"
                )
        return mechs

    def _jaas_plain_users(self, listener: str) -> dict[str, str]:
        """``user_<name>="<password>"`` options of the listener's PLAIN JAAS config (Kafka's)."""
        raw = self.config.extra(f"listener.name.{listener.lower()}.plain.sasl.jaas.config")
        if not raw:
            return {}
        _module, options = parse_jaas_config(raw)
        return {k[5:]: v for k, v in options.items() if k.startswith("user_")}

    def connection(self, listener: Listener, ssl_object: Any) -> ConnectionAuth:
        principal = ANONYMOUS
        if ssl_object is not None:
            principal = certificate_principal(ssl_object.getpeercert()) or ANONYMOUS
        return ConnectionAuth(
            listener.name,
            principal=principal,
            mechanisms=self.mechanisms(listener.name) if listener.uses_sasl else (),
            plain_check=functools.partial(self._check_plain, listener.name),
            scram_lookup=self.credentials.get,
        )

    def _check_plain(self, listener: str, username: str, password: str) -> bool:
        """The listener's JAAS ``user_*`` entries, else the user's SCRAM credentials.

        Checking PLAIN against stored SCRAM credentials is a streamrt convenience: users added
        with ``streamrt users add`` can log in with either mechanism.
        """
        jaas = self._plain_users.get(listener, {})
        if username not in jaas:
            for mech in MECHANISMS.values():
                cred = self.credentials.get(username, mech.name)
                if cred is not None:
                    return verify_password(mech, cred, password)
        # A JAAS entry or an unknown user costs the same PBKDF2 as a stored user (default
        # iterations), so the answer's timing does not tell which user names exist.
        mech, dummy = _dummy_credential()
        verify_password(mech, dummy, password)
        return username in jaas and constant_time_equal(jaas[username], password)

    def authorize(
        self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        if self.authorizer is None:
            return True
        allowed = self.authorizer.authorize(principal, host, op, rtype, name)
        if not allowed:
            logger.info(
                "authorization denied: %s %s %s %s:%s",
                principal,
                host,
                op.name,
                rtype.name,
                name,
            )
        return allowed
