"""Issue 42: one small request with a lying length must not make the broker allocate (and
abort). The broker runs in a child process with a capped address space, so a regression shows
as a dead child, not a dead pytest."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import codec_for
from tests.broker.subprocess_broker import ChildBroker, child_broker, request_header, uvarint

#: ~2^32 entries: kio asked for 32 GiB for this and the process aborted
HUGE_COMPACT = uvarint(2**32)
HUGE_INT32 = struct.pack(">i", 2**31 - 1)


@pytest.fixture
def child(tmp_path: Path) -> Iterator[ChildBroker]:
    """One child per test, so each case is proven on its own broker."""
    with child_broker(tmp_path) as broker:
        yield broker


def _probe(api_key: int, version: int, length: bytes) -> bytes:
    """The outside probe's shape: a valid header, then the body's first array count."""
    flexible = codec_for(api_key, version).request_cls.__flexible__  # type: ignore[attr-defined]
    return request_header(api_key, version, b"probe-client-01", flexible) + length


@pytest.mark.parametrize(
    ("api_key", "version", "length"),
    [
        (ApiKey.METADATA, 12, HUGE_COMPACT),
        (ApiKey.CREATE_TOPICS, 7, HUGE_COMPACT),
        (ApiKey.METADATA, 4, HUGE_INT32),  # classic int32 count: only overcommit saved it
    ],
    ids=["metadata-v12", "create-topics-v7", "metadata-v4-int32"],
)
def test_probe_with_a_huge_array_count_closes_only_its_connection(
    child: ChildBroker, api_key: int, version: int, length: bytes
) -> None:
    frame = _probe(api_key, version, length)
    if length == HUGE_COMPACT:
        assert len(frame) + 4 == 35  # the reported 35-byte request, size prefix included
    with child.connect() as bystander:  # a client already connected keeps being served
        child.send_bad(frame)
        child.assert_alive(after=f"API {api_key} v{version} with a huge array count")
        body = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 9, 1) + b"b"
        bystander.sendall(len(body).to_bytes(4, "big") + body)
        assert bystander.recv(8, socket.MSG_WAITALL)[4:8] == (9).to_bytes(4, "big")
    assert _metadata_of_two_topics(child) is not None  # lengths that fit are still served
    assert f"malformed request (API {api_key} v{version}): FrameLengthError" in child.log_tail()


def test_every_served_version_survives_a_body_of_huge_lengths(child: ChildBroker) -> None:
    """Every api key and version the broker advertises, flexible or not, gets a body where any
    length it reads is huge (wherever the fixed fields before it end)."""
    served = child.served()
    assert len(served) > 200  # every (api_key, version) of ApiVersions, not a sample
    for api_key, version in served:
        flexible = codec_for(api_key, version).request_cls.__flexible__  # type: ignore[attr-defined]
        body = (HUGE_COMPACT if flexible else HUGE_INT32) * 40
        child.send_bad(request_header(api_key, version, b"sweep", flexible) + body)
        assert child.proc.poll() is None, f"broker died on API {api_key} v{version}"
    child.assert_alive(after="the sweep of every served version")


def _metadata_of_two_topics(child: ChildBroker) -> bytes | None:
    """Metadata v12 for two named topics (counts and lengths that fit): its answer."""
    topic = b"\x00" * 16 + uvarint(len(b"nope") + 1) + b"nope" + b"\x00"
    body = uvarint(3) + topic + topic + b"\x00\x00\x00"  # no auto-create, no ops, no tags
    frame = request_header(ApiKey.METADATA, 12, b"ok", True) + body
    with child.connect() as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        size = int.from_bytes(s.recv(4, socket.MSG_WAITALL), "big")
        answer = s.recv(size, socket.MSG_WAITALL)
    return answer if answer[:4] == (1).to_bytes(4, "big") else None


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(ApiKey.DESCRIBE_PRODUCERS, 0), (ApiKey.DELETE_TOPICS, 6)],
    ids=["describe-producers-v0", "delete-topics-v6"],
)
def test_null_for_a_non_nullable_array_is_malformed_not_a_handler_error(
    child: ChildBroker, api_key: int, version: int
) -> None:
    """Found by the fuzz test: kio reads a null non-nullable array as None and the handler
    failed on it (TypeError, logged as an internal error); Kafka refuses such a request."""
    child.send_bad(request_header(api_key, version, b"nulls", True) + b"\x00" + bytes(8))
    child.assert_alive(after=f"API {api_key} v{version} with a null array")
    log = child.log_tail()
    assert f"malformed request (API {api_key} v{version}): FrameLengthError: null array" in log
    assert "Traceback" not in log
