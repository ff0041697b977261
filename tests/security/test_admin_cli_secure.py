"""The admin CLI against the secured embedded broker: ``--command-config`` with TLS and SASL
(PLAIN, SCRAM-SHA-256/512), ``streamrt users`` and ``streamrt acls``, and group ACLs deciding
who may remove a group's static members."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from streamrt.cli import main
from streamrt.client_config import ClientConfig
from tests.security.conftest import USERS, Pki, address


def props(
    tmp_path: Path,
    pki: Pki,
    user: str,
    *,
    mechanism: str = "SCRAM-SHA-256",
    password: str | None = None,
    protocol: str = "SASL_SSL",
) -> Path:
    secret = USERS.get(user, "") if password is None else password
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    lines = [
        f"security.protocol={protocol}",
        f"sasl.mechanism={mechanism}",
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{secret}";',
    ]
    if protocol.endswith("SSL"):
        lines.append(f"ssl.truststore.location={pki.ca}")
        lines.append("ssl.truststore.type=PEM")
    path = tmp_path / f"{user}-{mechanism}-{protocol}.properties"
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """``streamrt <argv> --output json``: (exit code, parsed stdout, stderr)."""
    code = main([*argv, "--output", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


@pytest.mark.parametrize(
    "mechanism,protocol",
    [("SCRAM-SHA-512", "SASL_SSL"), ("SCRAM-SHA-256", "SASL_PLAINTEXT"), ("PLAIN", "SASL_SSL")],
)
def test_admin_cli_authenticates_over_sasl_and_tls(
    acl_broker,
    pki: Pki,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mechanism: str,
    protocol: str,
) -> None:
    bootstrap = address(acl_broker, protocol)
    config = props(tmp_path, pki, "admin", mechanism=mechanism, protocol=protocol)
    topic = f"sec-{uuid.uuid4().hex[:6]}"
    code, doc, err = cli(
        capsys,
        "topics",
        "create",
        "--topic",
        topic,
        "--partitions",
        "2",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        str(config),
    )
    assert code == 0, err
    code, doc, err = cli(
        capsys, "topics", "list", "--bootstrap-server", bootstrap, "--command-config", str(config)
    )
    assert code == 0, err
    assert topic in json.dumps(doc)


def test_a_wrong_password_fails_clearly(
    acl_broker, pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = props(tmp_path, pki, "admin", password="wrong")
    code, _doc, err = cli(
        capsys,
        "topics",
        "list",
        "--bootstrap-server",
        address(acl_broker, "SASL_SSL"),
        "--command-config",
        str(bad),
        "--timeout",
        "5",
    )
    assert code == 1
    assert "authentication failed" in err.lower()


def test_users_add_list_delete(
    acl_broker, pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = address(acl_broker, "SASL_SSL")
    admin = str(props(tmp_path, pki, "admin"))
    secret_file = tmp_path / "carol.secret"
    secret_file.write_text("carol-secret\n")
    code, doc, err = cli(
        capsys,
        "users",
        "add",
        "carol",
        "--mechanism",
        "SCRAM-SHA-256",
        "--password-file",
        str(secret_file),
        "--iterations",
        "4096",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        admin,
    )
    assert (code, doc) == (0, {"carol": None}), err
    code, doc, err = cli(
        capsys, "users", "list", "carol", "--bootstrap-server", bootstrap, "--command-config", admin
    )
    assert (code, doc) == (0, {"carol": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096}]}), err

    carol = str(props(tmp_path, pki, "carol", password="carol-secret"))
    code, _doc, err = cli(
        capsys, "topics", "list", "--bootstrap-server", bootstrap, "--command-config", carol
    )
    assert code == 0, err  # carol can log in (she sees no topic without ACLs)

    code, doc, err = cli(
        capsys,
        "users",
        "delete",
        "carol",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        admin,
    )
    assert (code, doc) == (0, {"carol": None}), err
    code, _doc, err = cli(
        capsys,
        "topics",
        "list",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        carol,
        "--timeout",
        "5",
    )
    assert code == 1 and "authentication failed" in err.lower()

    alice = str(props(tmp_path, pki, "alice"))
    code, _doc, err = cli(
        capsys, "users", "list", "--bootstrap-server", bootstrap, "--command-config", alice
    )
    assert code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in err.upper()


async def _leave_static_member(bootstrap: str, cfg: ClientConfig, topic: str, group: str) -> None:
    """Join ``group`` as static member m-1 and stop: a static member sends no LeaveGroup."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id="m-1",
        session_timeout_ms=30000,
        heartbeat_interval_ms=500,
        **cfg.aiokafka_consumer_kwargs(),
    )
    await consumer.start()
    try:
        await consumer.getmany(timeout_ms=3000)  # joins the group and gets its partition
        assert consumer.assignment()
    finally:
        await consumer.stop()


def test_removing_members_needs_read_on_the_group(
    acl_broker, pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = address(acl_broker, "SASL_SSL")
    admin, alice = str(props(tmp_path, pki, "admin")), str(props(tmp_path, pki, "alice"))
    topic, group = f"rm-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    assert (
        cli(
            capsys,
            "topics",
            "create",
            "--topic",
            topic,
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            admin,
        )[0]
        == 0
    )
    admin_cfg = ClientConfig.from_properties(
        {
            "security.protocol": "SASL_SSL",
            "ssl.truststore.location": str(pki.ca),
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "admin",
            "sasl.password": USERS["admin"],
        }
    )
    asyncio.run(_leave_static_member(bootstrap, admin_cfg, topic, group))
    remove = (
        "groups",
        "remove-members",
        "--group",
        group,
        "--instance-id",
        "m-1",
        "--bootstrap-server",
        bootstrap,
    )

    code, _doc, err = cli(capsys, *remove, "--command-config", alice)
    assert code == 1
    assert "GROUP_AUTHORIZATION_FAILED" in err.upper()

    code, doc, err = cli(
        capsys,
        "acls",
        "add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "READ",
        "--group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        admin,
    )
    assert code == 0, err
    code, doc, err = cli(
        capsys,
        "acls",
        "list",
        "--group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        admin,
    )
    assert code == 0, err
    assert doc == [
        {
            "resource_type": "GROUP",
            "resource_name": group,
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "READ",
            "permission": "ALLOW",
        }
    ]

    code, doc, err = cli(capsys, *remove, "--command-config", alice)
    assert code == 0, err
    assert doc["results"] == {"m-1": None}

    code, doc, err = cli(
        capsys,
        "acls",
        "delete",
        "--group",
        group,
        "--principal",
        "User:alice",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        admin,
    )
    assert code == 0 and len(doc) == 1, err
    code, doc, err = cli(
        capsys,
        "acls",
        "list",
        "--group",
        group,
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        admin,
    )
    assert (code, doc) == (0, []), err
