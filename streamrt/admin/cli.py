"""``streamrt groups …``, ``streamrt topics …`` (and ``acls``/``users``, see
:mod:`streamrt.admin.access_cli`): operator commands over :class:`AdminClient`.

Flags follow Kafka's ``kafka-consumer-groups.sh`` / ``kafka-topics.sh`` where they exist;
``--command-config FILE`` takes Kafka client properties (TLS, SASL) as Kafka's tools do.
``--output json`` prints one JSON document for scripts. Exit codes: 0 ok, 1 failure, 3 partial
(``remove-members``: some instance ids were not members of the group).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from streamrt.admin.client import AdminClient
from streamrt.admin.models import ConfigEntry, GroupDescription, NewTopic, TopicDescription
from streamrt.cli_options import (
    add_bootstrap_server,
    add_command_config,
    add_key_values,
    add_output,
    parse_key_values,
    positive_seconds,
)
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("register",)

EXIT_OK, EXIT_FAILED, EXIT_PARTIAL = 0, 1, 3
_BOOTSTRAP_ENV = "STREAMRT_BOOTSTRAP_SERVERS"

Results = dict[str, KafkaError | None]


def register(subparsers: Any) -> None:
    _register_groups(subparsers)
    _register_topics(subparsers)


def _common(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser, "brokers to bootstrap from", env=_BOOTSTRAP_ENV)
    add_command_config(parser, "the admin connection")
    add_output(parser)
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="give up after this long, retries included (default 30)",
    )


def _register_groups(subparsers: Any) -> None:
    groups = subparsers.add_parser(
        "groups",
        help="inspect consumer groups and remove static members",
        description=(
            "Consumer-group administration against any Kafka-protocol broker (streamrt's or "
            "Apache Kafka 2.3+). remove-members is KIP-345's admin call: it removes static "
            "members by group.instance.id so the group rebalances now instead of after "
            "session.timeout.ms (classic and KIP-848 consumer groups; on streamrt's broker "
            "KIP-1071 streams groups too)."
        ),
    )
    sub = groups.add_subparsers(dest="groups_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="list every group with its protocol type and state")
    _common(p)
    p.set_defaults(func=_groups_list)

    p = sub.add_parser(
        "describe",
        help="state, protocol and members (instance ids, assignments) of groups",
        description="Describe groups: state, protocol and a table of members with their "
        "member id, group.instance.id, client id, host and assigned partitions.",
    )
    _common(p)
    p.add_argument("--group", action="append", required=True, help="group id (repeatable)")
    p.set_defaults(func=_groups_describe)

    p = sub.add_parser(
        "remove-members",
        help="remove static members by group.instance.id (one batch LeaveGroup v3+)",
        description="Remove static members from a group by group.instance.id, e.g. after "
        "retiring an instance for good. Exit 0 if all were removed, 3 if some were not "
        "members of the group, 1 on any other error.",
    )
    _common(p)
    p.add_argument("--group", required=True, help="group id")
    p.add_argument(
        "--instance-id",
        action="append",
        required=True,
        dest="instance_ids",
        metavar="ID",
        help="group.instance.id to remove (repeatable)",
    )
    p.set_defaults(func=_groups_remove_members)

    p = sub.add_parser(
        "delete",
        help="delete empty groups and their committed offsets",
        description="Delete groups; a group with members fails with NON_EMPTY_GROUP.",
    )
    _common(p)
    p.add_argument("--group", action="append", required=True, help="group id (repeatable)")
    p.set_defaults(func=_groups_delete)


def _register_topics(subparsers: Any) -> None:
    topics = subparsers.add_parser(
        "topics",
        help="list, create, delete and describe topics",
        description="Topic administration with kafka-topics.sh's flags.",
    )
    sub = topics.add_subparsers(dest="topics_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="topic names")
    _common(p)
    p.add_argument("--exclude-internal", action="store_true", help="hide internal topics")
    p.set_defaults(func=_topics_list)

    p = sub.add_parser("create", help="create a topic")
    _common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=-1, help="default: the broker's")
    p.add_argument("--replication-factor", type=int, default=-1, help="default: the broker's")
    add_key_values(p, "--config", "topic config override, e.g. cleanup.policy=compact (repeatable)")
    p.add_argument("--if-not-exists", action="store_true", help="succeed if it exists")
    p.set_defaults(func=_topics_create)

    p = sub.add_parser("delete", help="delete topics")
    _common(p)
    p.add_argument("--topic", action="append", required=True, help="topic (repeatable)")
    p.add_argument("--if-exists", action="store_true", help="succeed if a topic is missing")
    p.set_defaults(func=_topics_delete)

    p = sub.add_parser("describe", help="partitions, leaders, replicas and non-default configs")
    _common(p)
    p.add_argument("--topic", action="append", help="topic (repeatable; default: all)")
    p.set_defaults(func=_topics_describe)


# -- running -------------------------------------------------------------------------------


def _run(args: argparse.Namespace, op: Callable[[AdminClient], Awaitable[int]]) -> int:
    async def main() -> int:
        async with AdminClient(
            args.bootstrap_server,
            request_timeout=args.timeout,
            api_timeout=args.timeout,
            config=args.command_config,
        ) as admin:
            return await op(admin)

    return asyncio.run(main())


def _emit(args: argparse.Namespace, document: Any, text: str) -> None:
    if args.output == "json":
        print(json.dumps(document, indent=2, sort_keys=False))
    elif text:
        print(text)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [list(header)] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def _error_json(error: KafkaError | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {"code": error.code.name.upper(), "message": str(error)}


def _emit_results(
    args: argparse.Namespace, results: Results, ok: str, doc: Any | None = None
) -> int:
    """A result per name (``ok`` or the error); exit 0 only if none failed."""
    rows = [
        (name, ok if e is None else e.code.name.upper(), "" if e is None else str(e))
        for name, e in results.items()
    ]
    doc = {n: _error_json(e) for n, e in results.items()} if doc is None else doc
    _emit(args, doc, _table(("NAME", "RESULT", "DETAIL"), rows))
    return EXIT_OK if all(e is None for e in results.values()) else EXIT_FAILED


# -- groups --------------------------------------------------------------------------------


def _groups_list(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        groups = await admin.list_groups()
        doc = [
            {"group_id": g.group_id, "protocol_type": g.protocol_type, "state": g.state}
            for g in groups
        ]
        rows = [(g.group_id, g.protocol_type or None, g.state) for g in groups]
        _emit(args, doc, _table(("GROUP", "PROTOCOL-TYPE", "STATE"), rows) if rows else "")
        return EXIT_OK

    return _run(args, op)


def _format_assignment(partitions: dict[str, tuple[int, ...]] | None) -> str | None:
    if partitions is None:
        return None
    return " ".join(f"{t}[{','.join(map(str, ps))}]" for t, ps in sorted(partitions.items()))


def _describe_text(g: GroupDescription) -> str:
    lines = [
        f"Group:         {g.group_id}",
        f"State:         {g.state}",
        f"Protocol type: {g.protocol_type or '-'}",
        f"Protocol:      {g.protocol or '-'}",
        f"Coordinator:   {g.coordinator_id}",
        f"Members:       {len(g.members)}",
    ]
    if g.members:
        rows = [
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                _format_assignment(m.assignment.partitions if m.assignment else None),
            )
            for m in sorted(g.members, key=lambda m: (m.group_instance_id or "", m.member_id))
        ]
        lines += ["", _table(("MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"), rows)]
    return "\n".join(lines)


def _groups_describe(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        described = await admin.describe_groups(args.group)
        doc = [g.to_json() for g in described.values()]
        _emit(args, doc, "\n\n".join(_describe_text(g) for g in described.values()))
        return EXIT_OK

    return _run(args, op)


def _groups_remove_members(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        results = await admin.remove_members(args.group, args.instance_ids)
        doc = {
            "group_id": args.group,
            "results": {i: _error_json(e) for i, e in results.items()},
        }
        if _emit_results(args, results, "REMOVED", doc) == EXIT_OK:
            return EXIT_OK
        if all(e is None or e.code == ErrorCode.unknown_member_id for e in results.values()):
            return EXIT_PARTIAL
        return EXIT_FAILED

    return _run(args, op)


def _groups_delete(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        return _emit_results(args, await admin.delete_groups(args.group), "DELETED")

    return _run(args, op)


# -- topics --------------------------------------------------------------------------------


def _topics_list(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        topics = await admin.list_topics(include_internal=not args.exclude_internal)
        names = sorted(topics)
        _emit(args, names, "\n".join(names))
        return EXIT_OK

    return _run(args, op)


def _topics_create(args: argparse.Namespace) -> int:
    topic = NewTopic(
        args.topic,
        args.partitions,
        args.replication_factor,
        parse_key_values(args.config, "--config"),
    )

    async def op(admin: AdminClient) -> int:
        results = await admin.create_topics([topic])
        error = results.get(topic.name)
        exists = error is not None and error.code == ErrorCode.topic_already_exists
        if exists and args.if_not_exists:
            results[topic.name] = None
        return _emit_results(args, results, "CREATED")

    return _run(args, op)


def _topics_delete(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        results = await admin.delete_topics(args.topic)
        if args.if_exists:
            for name, error in results.items():
                if error is not None and error.code == ErrorCode.unknown_topic_or_partition:
                    results[name] = None
        return _emit_results(args, results, "DELETED")

    return _run(args, op)


def _topic_text(t: TopicDescription, configs: dict[str, ConfigEntry]) -> str:
    overrides = ",".join(
        f"{c.name}={'<sensitive>' if c.is_sensitive else c.value}"
        for c in sorted(configs.values(), key=lambda c: c.name)
        if c.source == "DYNAMIC_TOPIC_CONFIG"
    )
    replication = len(t.partitions[0].replicas) if t.partitions else 0
    head = (
        f"Topic: {t.name}\tTopicId: {t.topic_id or '-'}\tPartitionCount: {len(t.partitions)}"
        f"\tReplicationFactor: {replication}\tConfigs: {overrides}"
    )
    rows = [
        f"\tTopic: {t.name}\tPartition: {p.partition}\tLeader: {p.leader}"
        f"\tReplicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
        for p in t.partitions
    ]
    return "\n".join([head, *rows])


def _topics_describe(args: argparse.Namespace) -> int:
    async def op(admin: AdminClient) -> int:
        if args.topic:
            topics = await admin.describe_topics(args.topic)
        else:
            topics = await admin.list_topics(include_internal=True)
        configs = await admin.describe_topic_configs(sorted(topics)) if topics else {}
        doc = [
            {
                **t.to_json(),
                "configs": {
                    c.name: {"value": None if c.is_sensitive else c.value, "source": c.source}
                    for c in configs.get(name, {}).values()
                },
            }
            for name, t in sorted(topics.items())
        ]
        text = "\n".join(_topic_text(t, configs.get(n, {})) for n, t in sorted(topics.items()))
        _emit(args, doc, text)
        return EXIT_OK

    return _run(args, op)
