"""``streamrt console``: the web console of a running application, from any machine that can
reach one of its instances' REST endpoints (every instance also serves it at ``/console``)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from streamrt.rest.settings import TOKEN_ENV

__all__ = ("register",)

_URL_ENV = "STREAMRT_REST_URL"


def register(subparsers: Any) -> None:
    default = os.environ.get(_URL_ENV)
    parser = subparsers.add_parser(
        "console",
        help="serve the live web console of a running application",
        description="Serve the console page on --bind:--port; it reads everything through the "
        "first --url that answers (then any instance that one reported up). Without --token "
        "the console is read-only; with it, member removal and reload need that token typed "
        "into the page.",
    )
    parser.add_argument(
        "--url",
        action="append",
        default=[default] if default else [],
        required=default is None,
        help=f"an instance's REST endpoint, e.g. http://web-1:7070; repeatable "
        f"(default: ${_URL_ENV})",
    )
    parser.add_argument("--port", type=int, default=8070, help="port to serve on (default 8070)")
    parser.add_argument(
        "--bind", default="127.0.0.1", help="interface to serve on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--token",
        default=None,
        help=f"the application's REST token (default: ${TOKEN_ENV}); without one the "
        "console is read-only",
    )
    parser.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from streamrt.rest.console_proxy import create_console_app
    from streamrt.rest.settings import DEFAULT_HEADER_TIMEOUT_MS
    from streamrt.rest.slow_clients import with_header_timeout

    token = args.token or os.environ.get(TOKEN_ENV) or None
    app = create_console_app(args.url, token)
    mode = "remove/reload with the token" if token else "read-only"
    print(f"console: http://{args.bind}:{args.port}/console ({mode}; via {', '.join(args.url)})")
    uvicorn.run(
        app,
        host=args.bind,
        port=args.port,
        log_level="warning",
        access_log=False,
        http=with_header_timeout(DEFAULT_HEADER_TIMEOUT_MS / 1000),  # slow clients cut off
    )
    return 0
