"""``streamrt instances list|remove|reload``: through an instance's REST endpoint.

``reload`` asks that one instance to reload in place (as ``kill -HUP``: a successor from the
current code takes over through the hand-off socket); it needs the bearer token.

``remove`` sends one batch LeaveGroup (through the instance, which uses the same admin client
as ``streamrt groups remove-members``). Exit codes: 0 all removed, 3 some ids were not
members, 1 any other failure.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from streamrt.cli_options import add_env_default, add_output
from streamrt.rest.models import ErrorBody, InstancesView, RemoveMembersResponse
from streamrt.rest.settings import TOKEN_ENV

__all__ = ("register",)

EXIT_OK, EXIT_FAILED, EXIT_PARTIAL = 0, 1, 3
_URL_ENV = "STREAMRT_REST_URL"
M = TypeVar("M", bound=BaseModel)


class _Reloading(BaseModel):
    """``POST /v1/reload``'s answer."""

    status: str
    pid: int


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "instances",
        help="list a running application's instances and remove retired ones (REST)",
        description="Talk to any instance's REST endpoint (its application.server).",
    )
    sub = parser.add_subparsers(dest="instances_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="instances with their hosts and group.instance.ids")
    _common(p)
    p.set_defaults(func=_list)

    p = sub.add_parser(
        "remove",
        help="remove stopped instances from the group now (batch LeaveGroup)",
        description="Remove static members so the group rebalances now instead of after "
        "session.timeout.ms. Stop the instance first. Exit 0 if all were removed, 3 if some "
        "were not members, 1 on any other error.",
    )
    _common(p)
    p.add_argument(
        "--instance",
        action="append",
        default=[],
        metavar="ID",
        help="an instance id (group.instance.id of the process), expands to its threads",
    )
    p.add_argument(
        "--group-instance-id",
        action="append",
        default=[],
        dest="group_instance_ids",
        metavar="ID",
        help="one member's group.instance.id, e.g. web-3-thread-1 (repeatable)",
    )
    p.add_argument("--token", default=None, help=f"bearer token (default: ${TOKEN_ENV})")
    p.set_defaults(func=_remove)

    p = sub.add_parser(
        "reload",
        help="reload one instance in place (a successor takes over, no rebalance)",
        description="As kill -HUP on the instance at --url: it starts a successor from the "
        "current code, which takes over its partitions and state through the hand-off socket.",
    )
    _common(p)
    p.add_argument("--token", default=None, help=f"bearer token (default: ${TOKEN_ENV})")
    p.set_defaults(func=_reload)


def _call(
    args: argparse.Namespace, method: str, path: str, ok: int, model: type[M], **kwargs: Any
) -> M | int:
    """``method`` on ``--url`` + ``path`` (with the bearer token when the command takes one),
    its body checked against ``model`` if it answers ``ok``; else one ``streamrt: error:``
    line is printed and the exit code returned."""
    headers: dict[str, str] = {}
    if "token" in args:  # the commands that change something take --token
        token = args.token or os.environ.get(TOKEN_ENV)
        if token:
            headers["Authorization"] = f"Bearer {token}"
    url = f"{args.url.rstrip('/')}{path}"
    logging.getLogger("httpx").setLevel(logging.WARNING)  # no request log line on stderr
    try:
        response = httpx.request(method, url, headers=headers, **kwargs)
    except httpx.InvalidURL as exc:
        return _fail(f"--url {args.url!r} is not a URL: {exc}")
    except httpx.UnsupportedProtocol:
        return _fail(f"--url {args.url!r} must start with http:// or https://")
    except httpx.HTTPError as exc:
        return _fail(f"cannot reach {url}: {exc or type(exc).__name__}")
    if response.status_code != ok:
        return _http_error(url, response)
    try:
        return model.model_validate_json(response.content)
    except ValidationError:
        return _fail(
            f"{url} answered HTTP {response.status_code} with a body that is not a streamrt REST "
            "endpoint's: is --url an instance's application.server?"
        )


def _reload(args: argparse.Namespace) -> int:
    body = _call(args, "POST", "/v1/reload", 202, _Reloading, timeout=30)
    if isinstance(body, int):
        return body
    if args.output == "json":
        print(body.model_dump_json(indent=2))
    else:
        print(f"reloading: pid {body.pid} is starting its successor")
    return EXIT_OK


def _common(parser: argparse.ArgumentParser) -> None:
    add_env_default(
        parser, "--url", _URL_ENV, "any instance's REST endpoint, e.g. http://web-1:7070"
    )
    add_output(parser)


def _list(args: argparse.Namespace) -> int:
    body = _call(args, "GET", "/v1/instances", 200, InstancesView, timeout=30)
    if isinstance(body, int):
        return body
    if args.output == "json":
        print(body.model_dump_json(indent=2))
        return EXIT_OK
    print(f"application {body.application_id}")
    print(f"{'INSTANCE':<20} {'APPLICATION.SERVER':<24} GROUP.INSTANCE.IDS")
    for inst in body.instances:
        ids = ",".join(inst.group_instance_ids)
        print(f"{inst.instance_id:<20} {inst.application_server or '-':<24} {ids}")
    return EXIT_OK


def _remove(args: argparse.Namespace) -> int:
    ids = [*args.instance, *args.group_instance_ids]
    if not ids:
        print("error: give --instance or --group-instance-id", file=sys.stderr)
        return 2
    request = {"instance_ids": ids}
    body = _call(
        args, "POST", "/v1/members:remove", 200, RemoveMembersResponse, json=request, timeout=60
    )
    if isinstance(body, int):
        return body
    if args.output == "json":
        print(body.model_dump_json(indent=2))
    else:
        for r in body.results:
            print(f"{r.group_instance_id}: {'removed' if r.removed else r.error}")
    errors = {r.error for r in body.results if not r.removed}
    if not errors:
        return EXIT_OK
    return EXIT_PARTIAL if errors == {"UNKNOWN_MEMBER_ID"} else EXIT_FAILED


def _http_error(url: str, response: httpx.Response) -> int:
    """The error an instance answered (its ``message``), or one line of another server's
    page: never a multi-line HTML document on the terminal."""
    try:
        message = ErrorBody.model_validate_json(response.content).message
    except ValidationError:
        message = " ".join(response.text.split())[:200] or "(empty body)"
    return _fail(f"{url}: HTTP {response.status_code}: {message}")


def _fail(message: str) -> int:
    print(f"streamrt: error: {message}", file=sys.stderr)
    return EXIT_FAILED
