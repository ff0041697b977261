"""Fuzzing every request schema the broker serves (issue 42), through real sockets.

Hypothesis draws an advertised (api_key, version), flexible or not, a valid request of that
schema (kio's own strategies), encodes it and mutates the body: huge unsigned varints, huge or
negative int32/int16 lengths written anywhere, truncations, random bodies, bit flips, trailing
garbage. The broker (a child process with a capped address space, so an abort fails the test
instead of killing pytest) must stay up and answer ApiVersions on a new connection.

Budget: ``STREAMRT_FUZZ_EXAMPLES`` examples (default 300, about 10 s), e.g.
``STREAMRT_FUZZ_EXAMPLES=20000 pytest tests/broker/test_request_fuzz.py`` for a long run; CI
leaves it unset.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from kio.serial import entity_writer
from kio.static.primitive import Records

from streamrt.wire.codec import Chunks, codec_for
from tests.broker.subprocess_broker import ChildBroker, child_broker, request_header, uvarint

EXAMPLES = int(os.environ.get("STREAMRT_FUZZ_EXAMPLES", "300"))
#: a valid request may be parked (a long-polling Fetch, a JoinGroup): don't wait it out
_ANSWER_WAIT_S = 1.0

# kio registers strategies for its primitives but not for record bytes
st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

_HUGE = st.sampled_from([2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**35 - 1]) | st.integers(0, 2**35)
_INT32 = st.sampled_from([2**31 - 1, 2**30, -2]) | st.integers(-(2**31), 2**31 - 1)
#: where a length is written: often at the body's first fields (most bodies open with an array
#: or a string), anywhere otherwise (taken modulo the body's size)
_AT = st.integers(0, 16) | st.integers(0, 2**16)
_MUTATION = st.one_of(
    st.tuples(st.just("varint"), _AT, _HUGE),
    st.tuples(st.just("int32"), _AT, _INT32),
    st.tuples(st.just("int16"), _AT, st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just("truncate"), st.integers(1, 64)),
    st.tuples(st.just("random"), st.binary(max_size=200)),
    st.tuples(
        st.just("flip"),
        st.lists(st.tuples(st.integers(0, 2**16), st.integers(1, 255)), min_size=1, max_size=6),
    ),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=32)),
)


@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChildBroker]:
    with child_broker(tmp_path_factory.mktemp("request-fuzz")) as broker:
        yield broker


@pytest.fixture(scope="module")
def served(child: ChildBroker) -> list[tuple[int, int]]:
    return child.served()


def _mutate(body: bytes, mutation: tuple) -> bytes:  # type: ignore[type-arg]
    kind, *args = mutation
    out = bytearray(body)
    at = args[0] % (len(out) + 1) if kind in ("varint", "int32", "int16") else 0
    if kind == "varint":
        encoded = uvarint(args[1])
        out[at : at + len(encoded)] = encoded
    elif kind in ("int32", "int16"):
        out[at : at + (4 if kind == "int32" else 2)] = struct.pack(
            ">i" if kind == "int32" else ">h", args[1]
        )
    elif kind == "truncate":
        del out[max(len(out) - args[0], 0) :]
    elif kind == "random":
        return bytes(args[0])
    elif kind == "flip":
        for pos, mask in args[0]:
            if out:
                out[pos % len(out)] ^= mask
    else:
        out += args[0]
    return bytes(out)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(data=st.data(), mutation=_MUTATION)
def test_mutated_requests_of_every_schema_never_stop_the_broker(
    child: ChildBroker,
    served: list[tuple[int, int]],
    data: st.DataObject,
    mutation: tuple,  # type: ignore[type-arg]
) -> None:
    api_key, version = data.draw(st.sampled_from(served), label="api")
    request_cls = codec_for(api_key, version).request_cls
    request = data.draw(st.from_type(request_cls), label="request")
    out = Chunks()
    try:
        entity_writer(request_cls)(out, request)
    except ValueError:  # kio's strategies can draw a timedelta its writer cannot encode
        reject()
    flexible = request_cls.__flexible__  # type: ignore[attr-defined]
    frame = request_header(api_key, version, b"fuzz", flexible) + _mutate(b"".join(out), mutation)
    child.send_bad(frame, wait=_ANSWER_WAIT_S)
    child.assert_alive(after=f"API {api_key} v{version} mutated by {mutation!r:.200}")
