"""``streamrt acls add|list|delete`` and ``streamrt users add|list|delete``.

Flags follow ``kafka-acls.sh`` (``--allow-principal``, ``--operation``, ``--topic``,
``--group``, ``--cluster``, ``--resource-pattern-type``) and, for SCRAM users,
``kafka-configs.sh --entity-type users`` (mechanism, iterations). Passwords are salted and
hashed on this side; only the salted password crosses the wire. Exit codes: 0 ok, 1 failure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from streamrt.admin.access import (
    DEFAULT_ITERATIONS,
    AclBinding,
    AclOperation,
    PatternType,
    Permission,
    ResourceType,
)
from streamrt.admin.cli import EXIT_FAILED, EXIT_OK, _common, _emit, _error_json, _run, _table
from streamrt.admin.client import AdminClient
from streamrt.errors import ConfigError, KafkaError

__all__ = ("register",)

_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def register(subparsers: Any) -> None:
    _register_acls(subparsers)
    _register_users(subparsers)


# -- acls ----------------------------------------------------------------------------------


def _resource_args(p: argparse.ArgumentParser, *, filtering: bool) -> None:
    what = p.add_mutually_exclusive_group(required=not filtering)
    what.add_argument(
        "--topic", metavar="NAME", help="a topic (or prefix, with --resource-pattern-type prefixed)"
    )
    what.add_argument("--group", metavar="NAME", help="a consumer group (application.id)")
    what.add_argument("--cluster", action="store_true", help="the cluster resource")
    what.add_argument("--transactional-id", metavar="ID")
    p.add_argument(
        "--resource-pattern-type",
        type=str.upper,
        choices=[t.name for t in PatternType if t is not PatternType.UNKNOWN]
        if filtering
        else ["LITERAL", "PREFIXED"],
        default="ANY" if filtering else "LITERAL",
        help="literal or prefixed"
        + (" (filters also any, match; default any)" if filtering else ""),
    )


def _register_acls(subparsers: Any) -> None:
    acls = subparsers.add_parser(
        "acls",
        help="add, list and delete ACLs (CreateAcls/DescribeAcls/DeleteAcls)",
        description="ACLs on topics, groups and the cluster, as kafka-acls.sh manages them.",
    )
    sub = acls.add_subparsers(dest="acls_command", metavar="ACTION", required=True)
    for action, helptext in (
        ("add", "allow or deny principals operations on a resource"),
        ("list", "list ACLs matching the filter (all without one)"),
        ("delete", "delete ACLs matching the filter"),
    ):
        p = sub.add_parser(action, help=helptext)
        _common(p)
        _resource_args(p, filtering=action != "add")
        p.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
        p.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
        if action != "add":
            p.add_argument("--principal", action="append", default=[], metavar="User:NAME")
        p.add_argument(
            "--operation",
            action="append",
            default=[],
            type=str.upper,
            choices=[
                o.name
                for o in AclOperation
                if o is not AclOperation.UNKNOWN and (o is not AclOperation.ANY or action != "add")
            ],
            help="repeatable; add needs at least one",
        )
        p.add_argument(
            "--host", default=None, help="client host (default * for add, any for filters)"
        )
        p.set_defaults(func={"add": _acls_add, "list": _acls_list, "delete": _acls_delete}[action])


def _resource(args: argparse.Namespace) -> tuple[ResourceType, str | None]:
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.cluster:
        return ResourceType.CLUSTER, "kafka-cluster"
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    return ResourceType.ANY, None


def _bindings(args: argparse.Namespace) -> list[AclBinding]:
    rtype, name = _resource(args)
    pattern = PatternType[args.resource_pattern_type]
    principals = [(p, Permission.ALLOW) for p in args.allow_principal]
    principals += [(p, Permission.DENY) for p in args.deny_principal]
    if not principals:
        raise ConfigError("acls add needs --allow-principal or --deny-principal (User:NAME)")
    if not args.operation:
        raise ConfigError("acls add needs at least one --operation")
    return [
        AclBinding(rtype, name, pattern, principal, args.host or "*", AclOperation[op], perm)
        for principal, perm in principals
        for op in args.operation
    ]


def _filters(args: argparse.Namespace) -> list[AclBinding]:
    rtype, name = _resource(args)
    pattern = PatternType[args.resource_pattern_type]
    principals: list[tuple[str | None, Permission]] = [
        (p, Permission.ALLOW) for p in args.allow_principal
    ]
    principals += [(p, Permission.DENY) for p in args.deny_principal]
    principals += [(p, Permission.ANY) for p in args.principal]
    operations = [AclOperation[o] for o in args.operation] or [AclOperation.ANY]
    return [
        AclBinding(rtype, name, pattern, principal, args.host, op, perm)
        for principal, perm in principals or [(None, Permission.ANY)]
        for op in operations
    ]


def _acl_rows(bindings: list[AclBinding]) -> str:
    rows = [
        (
            b.resource_type.name,
            b.resource_name,
            b.pattern_type.name,
            b.principal,
            b.host,
            b.operation.name,
            b.permission.name,
        )
        for b in bindings
    ]
    header = ("RESOURCE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION")
    return _table(header, rows)


def _acls_add(args: argparse.Namespace) -> int:
    bindings = _bindings(args)

    async def op(admin: AdminClient) -> int:
        results = await admin.create_acls(bindings)
        doc = [
            {**b.to_json(), "error": _error_json(e)} for b, e in zip(bindings, results, strict=True)
        ]
        failed = [(b, e) for b, e in zip(bindings, results, strict=True) if e is not None]
        _emit(
            args, doc, _acl_rows([b for b, e in zip(bindings, results, strict=True) if e is None])
        )
        for b, e in failed:
            print(
                f"streamrt: error: {b.principal} {b.operation.name}: {_describe(e)}",
                file=sys.stderr,
            )
        return EXIT_FAILED if failed else EXIT_OK

    return _run(args, op)


def _acls_list(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        found: list[AclBinding] = []
        for f in _filters(args):
            found += [b for b in await admin.describe_acls(f) if b not in found]
        _emit(args, [b.to_json() for b in found], _acl_rows(found))
        return EXIT_OK

    return _run(args, op)


def _acls_delete(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        deleted: list[AclBinding] = []
        for f in _filters(args):
            deleted += await admin.delete_acls(f)
        _emit(args, [b.to_json() for b in deleted], _acl_rows(deleted))
        return EXIT_OK

    return _run(args, op)


def _describe(error: KafkaError) -> str:
    return f"{error.code.name.upper()}: {error}"


# -- users ---------------------------------------------------------------------------------


def _register_users(subparsers: Any) -> None:
    users = subparsers.add_parser(
        "users",
        help="SCRAM users: add/update, list, delete (Alter/DescribeUserScramCredentials)",
        description="SCRAM credentials, as kafka-configs.sh --entity-type users manages them.",
    )
    sub = users.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    p = sub.add_parser("add", help="create or update a user's SCRAM credential")
    _common(p)
    p.add_argument("name", help="the user name (principal User:NAME)")
    p.add_argument("--mechanism", action="append", type=str.upper, choices=_MECHANISMS, default=[])
    secret = p.add_mutually_exclusive_group(required=True)
    secret.add_argument("--password", help="the password (visible to ps; prefer --password-file)")
    secret.add_argument("--password-file", metavar="FILE", help="a file whose first line is it")
    p.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    p.set_defaults(func=_users_add)
    p = sub.add_parser("list", help="users and their SCRAM mechanisms (never secrets)")
    _common(p)
    p.add_argument("names", nargs="*", help="only these users")
    p.set_defaults(func=_users_list)
    p = sub.add_parser("delete", help="delete a user's SCRAM credential(s)")
    _common(p)
    p.add_argument("name")
    p.add_argument("--mechanism", action="append", type=str.upper, choices=_MECHANISMS, default=[])
    p.set_defaults(func=_users_delete)


def _alter_result(args: argparse.Namespace, results: dict[str, KafkaError | None], ok: str) -> int:
    doc = {u: _error_json(e) for u, e in results.items()}
    rows = [(u, ok if e is None else _describe(e)) for u, e in results.items()]
    _emit(args, doc, _table(("USER", "RESULT"), rows))
    return EXIT_FAILED if any(e is not None for e in results.values()) else EXIT_OK


def _users_add(args: argparse.Namespace) -> int:
    if args.password_file:
        password = Path(args.password_file).read_text(encoding="utf-8").splitlines()[0]
    else:
        password = args.password
    mechs = args.mechanism or list(_MECHANISMS)
    upsert = [(args.name, m, password, args.iterations) for m in mechs]

    async def op(admin: AdminClient) -> int:
        return _alter_result(args, await admin.alter_scram_users(upsert=upsert), "UPSERTED")

    return _run(args, op)


def _users_delete(args: argparse.Namespace) -> int:
    mechs = args.mechanism or list(_MECHANISMS)

    async def op(admin: AdminClient) -> int:
        if not args.mechanism:  # only the mechanisms the user has
            known = (await admin.describe_scram_users([args.name])).get(args.name)
            if isinstance(known, list):
                mechs[:] = [c.mechanism for c in known] or mechs
        delete = [(args.name, m) for m in mechs]
        return _alter_result(args, await admin.alter_scram_users(delete=delete), "DELETED")

    return _run(args, op)


def _users_list(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        users = await admin.describe_scram_users(args.names or None)
        doc: dict[str, Any] = {}
        rows = []
        failed = False
        for user, info in sorted(users.items()):
            if isinstance(info, KafkaError):
                failed = True
                doc[user] = {"error": _error_json(info)}
                rows.append((user, _describe(info)))
            else:
                doc[user] = [{"mechanism": c.mechanism, "iterations": c.iterations} for c in info]
                rows.append((user, ", ".join(f"{c.mechanism}(i={c.iterations})" for c in info)))
        _emit(args, doc, _table(("USER", "CREDENTIALS"), rows))
        return EXIT_FAILED if failed else EXIT_OK

    return _run(args, op)
