"""Host directory records: only a bare host:port, only with this app's signature."""

from __future__ import annotations

import json

import pytest

from streamrt.client_config import ClientConfig
from streamrt.rest.host_directory import HostDirectory
from streamrt.rest.host_records import BadHostRecord, HostRecord, parse_host_port, sign, verify


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("web-1.internal:7070", ("web-1.internal", 7070)),
        ("127.0.0.1:1", ("127.0.0.1", 1)),
        ("localhost:65535", ("localhost", 65535)),
        ("my_service:80", ("my_service", 80)),
    ],
)
def test_host_port_accepted(text: str, expected: tuple[str, int]) -> None:
    assert parse_host_port(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "127.0.0.1:8080/internal/admin?via=:1",
        "web-2:notaport",
        "web-2:0",
        "web-2:65536",
        "web-2:+80",
        "web-2: 80",
        "web-2",
        ":80",
        "user@web-2:80",
        "http://web-2:80",
        "web-2#x:80",
        "web 2:80",
        "999.1.1.1:80",
        "1.2.3:80",
        "-web:80",
        "[::1]:80",
        "web-2:\uff18\uff10",  # fullwidth digits
        "a" * 300 + ":80",
    ],
)
def test_anything_else_refused(text: str) -> None:
    with pytest.raises(BadHostRecord):
        parse_host_port(text)


def test_signed_by_this_app_only() -> None:
    record = HostRecord("web-2", "web-2.internal:7070", 1_700_000_000_000)
    value = sign("s3cret", "counting", record)
    assert verify("s3cret", "counting", b"web-2", value) == record
    with pytest.raises(BadHostRecord, match="signature"):
        verify("other", "counting", b"web-2", value)  # another secret
    with pytest.raises(BadHostRecord, match="signature"):
        verify("s3cret", "other-app", b"web-2", value)  # another app's record
    with pytest.raises(BadHostRecord, match="key"):
        verify("s3cret", "counting", b"web-3", value)  # copied under another member's key
    forged = {**json.loads(value), "application_server": "evil:80"}
    with pytest.raises(BadHostRecord, match="signature"):
        verify("s3cret", "counting", b"web-2", json.dumps(forged).encode())
    for junk in (b"", b"[]", b'{"instance_id": "web-2"}', b"\xff", b'{"updated_ms": "1e999"}'):
        with pytest.raises(BadHostRecord):
            verify("s3cret", "counting", b"web-2", junk)


def test_a_malformed_host_is_never_signed() -> None:
    with pytest.raises(BadHostRecord):
        sign("s3cret", "counting", HostRecord("web-2", "web-2:80/x", 1))


def test_directory_keeps_the_newest_signed_record() -> None:
    seen: list[dict[str, str]] = []
    directory = HostDirectory(
        ClientConfig({"bootstrap.servers": "127.0.0.1:9"}),
        "counting",
        "web-1",
        "127.0.0.1:7070",
        "s3cret",
        seen.append,
    )
    new = sign("s3cret", "counting", HostRecord("web-2", "127.0.0.1:2", 2000))
    old = sign("s3cret", "counting", HostRecord("web-2", "127.0.0.1:1", 1000))
    assert directory.apply(b"web-2", new)
    assert not directory.apply(b"web-2", old)  # replayed after a newer one
    assert not directory.apply(b"web-2", b'{"application_server": "evil:1"}')
    assert directory.hosts == {"web-2": "127.0.0.1:2"} and directory.rejected == 1
    assert directory.apply(b"web-2", None)  # tombstone: back to the assignment's host
    assert not directory.apply(b"web-2", old)  # still older than the newest seen
    assert directory.hosts == {}


def test_directory_without_a_secret_trusts_nothing() -> None:
    directory = HostDirectory(
        ClientConfig({"bootstrap.servers": "127.0.0.1:9"}),
        "counting",
        "web-1",
        "127.0.0.1:7070",
        None,
        lambda _hosts: None,
    )
    value = sign("s3cret", "counting", HostRecord("web-2", "127.0.0.1:2", 2000))
    assert not directory.apply(b"web-2", value)
    assert directory.hosts == {}
