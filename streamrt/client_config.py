"""Kafka client properties → keyword arguments for aiokafka, librdkafka and kafka-python.

One place turns the settings a user writes with Apache Kafka's names (``security.protocol``,
``ssl.truststore.location``, ``sasl.jaas.config``…) into what each Python client expects, so
the runtime, admin CLI, deploy driver and Spark source reach a secured cluster the same way.
Prefixes work as in Kafka Streams: ``consumer.``/``producer.``/``admin.`` override bare names
for that client; ``main.consumer.``, ``restore.consumer.`` and ``global.consumer.`` override
``consumer.`` for those consumers.

    cfg = ClientConfig.from_properties(load_properties(path))
    AIOKafkaConsumer(**cfg.aiokafka_consumer_kwargs())
    confluent_kafka.Producer(cfg.librdkafka("producer"))
    log.info("config %s", cfg.redacted())

Keystores and truststores are PEM (``ssl.keystore.type=PEM``, Kafka 2.7+): a file with the
private key and certificate chain, or inline ``ssl.keystore.key`` /
``ssl.keystore.certificate.chain`` / ``ssl.truststore.certificates``. JKS and PKCS12 need Java
or extra libraries: they are refused with a clear error.
"""

from __future__ import annotations

import dataclasses
import os
import re
import ssl
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from streamrt.errors import ConfigError

__all__ = (
    "ROLES",
    "SECURITY_PROTOCOLS",
    "ClientConfig",
    "SaslCredentials",
    "is_sensitive",
    "load_properties",
    "parse_jaas_config",
    "read_config_text",
    "redact",
)

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
HIDDEN = "[hidden]"  # what Kafka prints for password-type configs

# role → prefixes applied over the bare names, weakest first
ROLES: Mapping[str, tuple[str, ...]] = {
    "consumer": ("consumer.",),
    "main.consumer": ("consumer.", "main.consumer."),
    "restore.consumer": ("consumer.", "restore.consumer."),
    "global.consumer": ("consumer.", "global.consumer."),
    "producer": ("producer.",),
    "admin": ("admin.",),
}
_ALL_PREFIXES = tuple(sorted({p for ps in ROLES.values() for p in ps}, key=len, reverse=True))

_SENSITIVE = re.compile(r"password|secret|jaas|token|credential|ssl\.keystore\.key$|\.key\.pem$")


def is_sensitive(key: str) -> bool:
    """Would Kafka hide this config's value (PASSWORD type) or does it carry a secret?"""
    return bool(_SENSITIVE.search(key.lower()))


def redact(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy safe for logs, events and REST: secret values become ``[hidden]``."""
    return {
        k: (HIDDEN if is_sensitive(k) and v not in (None, "") else v) for k, v in values.items()
    }


def read_config_text(path: Path | str) -> str:
    """A config file's text (UTF-8), any failure a :class:`ConfigError` naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def load_properties(path: Path | str) -> dict[str, str]:
    """A Java ``.properties`` file, as Kafka tools read ``--command-config``."""
    out: dict[str, str] = {}
    lines = read_config_text(path).splitlines()
    pending = ""
    for lineno, raw in enumerate(lines, 1):
        line = pending + raw.strip()
        pending = ""
        if not line or line.startswith(("#", "!")):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if m is None:
            raise ConfigError(f"{path}:{lineno}: expected key=value, got {raw!r}")
        out[m[1]] = m[2]
    if pending:
        raise ConfigError(f"{path}: file ends inside a continued line")
    return out


_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
    r"(?P<options>.*?);?\s*$",
    re.DOTALL,
)
_JAAS_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas_config(value: str) -> tuple[str, dict[str, str]]:
    """``Module required key="v" …;`` → (module class name, options)."""
    m = _JAAS.match(value)
    if m is None:
        raise ConfigError(
            'sasl.jaas.config: expected \'<LoginModule> required username="…" password="…";\''
        )
    options: dict[str, str] = {}
    rest = m["options"].strip()
    pos = 0
    while pos < len(rest):
        om = _JAAS_OPTION.match(rest, pos)
        if om is None:
            raise ConfigError(
                f"sasl.jaas.config: cannot parse options near {rest[pos : pos + 20]!r}"
            )
        raw = om[2] if om[2] is not None else om[3]
        options[om[1]] = re.sub(r"\\(.)", r"\1", raw)
        pos = om.end()
        while pos < len(rest) and rest[pos] in " \t\r\n":
            pos += 1
    return m["module"], options


@dataclasses.dataclass(frozen=True)
class SaslCredentials:
    mechanism: str
    username: str
    password: str = dataclasses.field(repr=False)


_MODULE_MECHANISMS = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}


class _RoleView:
    """The effective settings of one client role (bare names overridden by its prefixes)."""

    def __init__(self, values: Mapping[str, str], role: str) -> None:
        self.role = role
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        value = self.values.get(key)
        return default if value is None or value == "" else value

    @property
    def security_protocol(self) -> str:
        proto = (self.get("security.protocol") or "PLAINTEXT").upper()
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"security.protocol={proto!r}: expected one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        return proto

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def _pem_type(self, key: str) -> None:
        kind = (self.get(key) or "PEM").upper()
        if kind != "PEM":
            raise ConfigError(
                f"{key}={kind}: only PEM stores are supported; convert with "
                "'openssl pkcs12 -in store.p12 -nodes' (or keytool -importkeystore to PKCS12 first)"
            )

    def _existing(self, key: str) -> str | None:
        path = self.get(key)
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"{key}={path!r}: no such file")
        return path

    def truststore(self) -> tuple[str | None, str | None]:
        """(CA file, inline CA PEM)."""
        self._pem_type("ssl.truststore.type")
        return self._existing("ssl.truststore.location"), self.get("ssl.truststore.certificates")

    def keystore(self) -> tuple[str | None, str | None, str | None]:
        """(PEM file with key + chain, inline key, inline chain)."""
        self._pem_type("ssl.keystore.type")
        key, chain = self.get("ssl.keystore.key"), self.get("ssl.keystore.certificate.chain")
        if (key is None) != (chain is None):
            raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain go together")
        return self._existing("ssl.keystore.location"), key, chain

    @property
    def key_password(self) -> str | None:
        return self.get("ssl.key.password") or self.get("ssl.keystore.password")

    @property
    def check_hostname(self) -> bool:
        algo = self.values.get("ssl.endpoint.identification.algorithm", "https")
        return algo.strip().lower() == "https"

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.uses_ssl:
            return None
        cafile, cadata = self.truststore()
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile, cadata=cadata)
        ctx.check_hostname = self.check_hostname
        keyfile, key, chain = self.keystore()
        if keyfile is not None:
            ctx.load_cert_chain(keyfile, password=self.key_password)
        elif key is not None and chain is not None:
            _load_inline_chain(ctx, key, chain, self.key_password)
        return ctx

    def sasl(self) -> SaslCredentials | None:
        if not self.uses_sasl:
            return None
        mech = (self.get("sasl.mechanism") or "GSSAPI").upper()
        if mech not in SASL_MECHANISMS:
            raise ConfigError(f"sasl.mechanism={mech!r}: expected one of {SASL_MECHANISMS}")
        username, password = self.get("sasl.username"), self.get("sasl.password")
        username = username or self.get("sasl.plain.username")
        password = password or self.get("sasl.plain.password")
        jaas = self.get("sasl.jaas.config")
        if jaas is not None:
            module, options = parse_jaas_config(jaas)
            short = module.rsplit(".", 1)[-1]
            allowed = _MODULE_MECHANISMS.get(short)
            if allowed is not None and mech not in allowed:
                raise ConfigError(f"sasl.jaas.config uses {short}, which cannot do {mech}")
            username = options.get("username", username)
            password = options.get("password", password)
        if mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and (not username or not password):
            raise ConfigError(
                f"{self.security_protocol} with {mech} needs credentials: sasl.jaas.config "
                "(PlainLoginModule/ScramLoginModule username=… password=…) or "
                "sasl.username and sasl.password"
            )
        return SaslCredentials(mech, username or "", password or "")


def _load_inline_chain(ctx: ssl.SSLContext, key: str, chain: str, password: str | None) -> None:
    """Python's ssl loads keys from files only: write a private 0600 temp file, load, delete."""
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(key.strip() + "\n" + chain.strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


class ClientConfig:
    """Kafka client properties with per-client views; see the module docstring."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {str(k): str(v) for k, v in values.items() if v is not None}

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> ClientConfig:
        return cls({k: str(v) for k, v in props.items() if v is not None})

    @classmethod
    def from_file(cls, path: Path | str) -> ClientConfig:
        return cls(load_properties(path))

    def properties(self) -> dict[str, str]:
        return dict(self._values)

    def for_role(self, role: str) -> dict[str, str]:
        """Bare names (keys without a client prefix) overridden by the role's prefixes."""
        if role not in ROLES:
            raise ConfigError(f"unknown client role {role!r}: expected one of {', '.join(ROLES)}")
        out = {k: v for k, v in self._values.items() if not k.startswith(_ALL_PREFIXES)}
        for prefix in ROLES[role]:
            out.update(
                {k[len(prefix) :]: v for k, v in self._values.items() if _has_prefix(k, prefix)}
            )
        return out

    def _view(self, role: str) -> _RoleView:
        return _RoleView(self.for_role(role), role)

    def security_protocol(self, role: str = "admin") -> str:
        return self._view(role).security_protocol

    def ssl_context(self, role: str = "admin") -> ssl.SSLContext | None:
        return self._view(role).ssl_context()

    def sasl_credentials(self, role: str = "admin") -> SaslCredentials | None:
        return self._view(role).sasl()

    def validate(self, roles: Iterable[str] = ("consumer", "producer", "admin")) -> None:
        """Raise ConfigError now for settings a client would reject at connect time."""
        for role in roles:
            view = self._view(role)
            view.ssl_context()
            view.sasl()

    # -- aiokafka ----------------------------------------------------------------------------

    def _aiokafka(self, role: str) -> dict[str, Any]:
        view = self._view(role)
        out: dict[str, Any] = {"security_protocol": view.security_protocol}
        if (bootstrap := view.get("bootstrap.servers")) is not None:
            out["bootstrap_servers"] = bootstrap
        if (client_id := view.get("client.id")) is not None:
            out["client_id"] = client_id
        ctx = view.ssl_context()
        if ctx is not None:
            out["ssl_context"] = ctx
        creds = view.sasl()
        if creds is not None:
            out["sasl_mechanism"] = creds.mechanism
            out["sasl_plain_username"] = creds.username
            out["sasl_plain_password"] = creds.password
        return out

    def aiokafka_consumer_kwargs(self, role: str = "consumer") -> dict[str, Any]:
        return self._aiokafka(role)

    def aiokafka_producer_kwargs(self) -> dict[str, Any]:
        return self._aiokafka("producer")

    def aiokafka_admin_kwargs(self) -> dict[str, Any]:
        return self._aiokafka("admin")

    # -- kafka-python ------------------------------------------------------------------------

    def kafka_python(self, role: str = "consumer") -> dict[str, Any]:
        """kafka-python takes the same security keyword names as aiokafka."""
        return self._aiokafka(role)

    # -- librdkafka (confluent-kafka, kcat) ----------------------------------------------------

    def librdkafka(self, role: str = "consumer") -> dict[str, str]:
        """A librdkafka config dict: PEM files map to ``ssl.ca.location``/``ssl.*.location``."""
        view = self._view(role)
        out: dict[str, str] = {"security.protocol": view.security_protocol.lower()}
        for key in ("bootstrap.servers", "client.id"):
            if (value := view.get(key)) is not None:
                out[key] = value
        if view.uses_ssl:
            cafile, cadata = view.truststore()
            if cafile is not None:
                out["ssl.ca.location"] = cafile
            elif cadata is not None:
                out["ssl.ca.pem"] = cadata
            keyfile, inline_key, chain = view.keystore()
            if keyfile is not None:
                out["ssl.certificate.location"] = keyfile
                out["ssl.key.location"] = keyfile
            elif inline_key is not None and chain is not None:
                out["ssl.key.pem"] = inline_key
                out["ssl.certificate.pem"] = chain
            if view.key_password is not None:
                out["ssl.key.password"] = view.key_password
            out["ssl.endpoint.identification.algorithm"] = (
                "https" if view.check_hostname else "none"
            )
        creds = view.sasl()
        if creds is not None:
            out["sasl.mechanisms"] = creds.mechanism
            out["sasl.username"] = creds.username
            out["sasl.password"] = creds.password
        return out

    # -- logging -----------------------------------------------------------------------------

    def redacted(self) -> dict[str, str]:
        """Every property, secrets as ``[hidden]``: what logs, events and REST may show."""
        return redact(self._values)

    def __repr__(self) -> str:
        return f"ClientConfig({self.redacted()!r})"


def _has_prefix(key: str, prefix: str) -> bool:
    """``consumer.x`` has prefix ``consumer.`` but ``restore.consumer.x`` does not."""
    if not key.startswith(prefix):
        return False
    longer = [p for p in _ALL_PREFIXES if len(p) > len(prefix) and p.endswith(prefix)]
    return not any(key.startswith(p) for p in longer)
