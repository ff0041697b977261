"""``streamrt console``'s server without an application: the page and its files are served
from the package, nothing is fetched from outside, and mutations are refused unless the
console has the token and the caller sends it (checked before any instance is asked)."""

from __future__ import annotations

import re

import httpx

from streamrt.cli import build_parser
from streamrt.rest.console_proxy import ConsoleThread
from tests.rest.instances import free_port

DEAD = f"http://127.0.0.1:{free_port()}"  # nothing listens there


def test_page_and_files_are_local_and_reads_fail_over_cleanly() -> None:
    console = ConsoleThread([DEAD], None).start()
    try:
        base = console.url.removesuffix("/console")
        page = httpx.get(console.url, timeout=10)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        refs = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert refs and all(r.startswith("/console/static/") for r in refs)  # no CDN
        for ref in refs:
            assert httpx.get(base + ref, timeout=10).status_code == 200, ref
        js = httpx.get(base + "/console/static/console.js", timeout=10)
        assert (
            "application/javascript" in js.headers["content-type"]
            or "text/javascript" in (js.headers["content-type"])
        )
        r = httpx.get(base + "/v1/cluster", timeout=20)
        assert r.status_code == 502 and r.json()["error"] == "NO_INSTANCE"
        assert DEAD in r.json()["message"]
    finally:
        console.stop()


def test_mutations_need_the_consoles_token() -> None:
    body = {"instance_ids": ["web-3"]}
    readonly = ConsoleThread([DEAD], None).start()
    guarded = ConsoleThread([DEAD], "tok").start()
    try:
        ro = readonly.url.removesuffix("/console")
        r = httpx.post(ro + "/v1/members:remove", json=body, timeout=10)
        assert r.status_code == 403 and r.json()["error"] == "MUTATIONS_DISABLED"
        g = guarded.url.removesuffix("/console")
        assert httpx.post(g + "/v1/members:remove", json=body, timeout=10).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        r = httpx.post(g + "/v1/reload", headers=wrong, timeout=10)
        assert r.status_code == 403 and r.json()["error"] == "FORBIDDEN"
        right = {"Authorization": "Bearer tok"}
        r = httpx.post(g + "/v1/members:remove", json=body, headers=right, timeout=20)
        assert r.status_code == 502 and r.json()["error"] == "NO_INSTANCE"  # passed on
    finally:
        readonly.stop()
        guarded.stop()


def test_console_subcommand_parses() -> None:
    args = build_parser(["console"]).parse_args(
        ["console", "--url", "http://a:1", "--url", "http://b:2", "--port", "9000"]
    )
    assert args.url == ["http://a:1", "http://b:2"] and args.port == 9000 and args.token is None
