"""Property-based fuzzing of Produce batches (issue 29): random, lying and bomb batches go
through a real Produce to the embedded broker. Properties: the broker keeps answering (every
request gets an answer on the same connection), refusals append nothing, every acknowledged
record is fetched back at its offset by a real client, and the peak RSS grows less than
``RSS_BOUND`` (the validator inflates at most 32 MiB per batch)."""

from __future__ import annotations

import functools
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamrt.broker.embedded import BrokerThread
from tests.broker.batches import batch, bomb, lie_count
from tests.broker.raw_produce import RawProducer
from tests.broker.test_bad_batches import RSS_BOUND, _peak_rss, _reset_peak_rss
from tests.kafka_helpers import create_topic, read_all

TOPIC = "fuzzed"
_acked: dict[int, bytes] = {}
_started: list[int] = []

_BOMB_CODECS, _BOMB_MIB = (1, 3, 4), (33, 96)
_values = st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=12)
_codec = st.sampled_from([0, 1, 2, 3, 4])
_lie = st.one_of(
    st.just(("none",)),
    st.tuples(st.just("count"), st.integers(-5, 2**31 - 1)),
    st.tuples(st.just("deltas"), st.randoms(use_true_random=False)),
    st.tuples(st.just("truncate"), st.integers(1, 60)),
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(1, 255)),
    st.tuples(st.just("bomb"), st.sampled_from(_BOMB_CODECS), st.sampled_from(_BOMB_MIB)),
)


@functools.cache
def _bomb(codec: int, mib: int) -> bytes:
    """Bombs are slow to build (the test compresses them): one of each kind per session."""
    return bytes(bomb(codec, mib << 20))


def _make(values: list[bytes], codec: int, lie: tuple) -> bytes:
    kind = lie[0]
    if kind == "bomb":
        return _bomb(lie[1], lie[2])
    if kind == "deltas" and len(values) > 1:
        deltas = list(range(len(values)))
        rnd: random.Random = lie[1]
        rnd.shuffle(deltas)
        return bytes(batch(values, codec=codec, deltas=deltas))
    buf = batch(values, codec=codec)
    if kind == "count":
        return bytes(lie_count(buf, lie[1]))
    if kind == "truncate":
        return bytes(buf[: max(len(buf) - lie[1], 0)])
    if kind == "flip":
        pos = lie[1] % len(buf)
        buf[pos] ^= lie[2]
    return bytes(buf)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(values=_values, codec=_codec, lie=_lie)
def test_fuzzed_batches(fuzz_broker: BrokerThread, values, codec, lie) -> None:
    if not _started:
        create_topic(fuzz_broker.bootstrap, TOPIC, 1)
        for codec_id in _BOMB_CODECS:  # built before the RSS mark: only the broker's cost counts
            for mib in _BOMB_MIB:
                _bomb(codec_id, mib)
        _started.append(_reset_peak_rss())
    records = _make(values, codec, lie)
    with RawProducer(fuzz_broker.bootstrap) as p:
        code, base = p.produce(TOPIC, 0, records)
        if code == 0:
            for i, value in enumerate(values):
                _acked[base + i] = value
        else:
            assert code in (2, 10, 18, 32, 43, 76, 87), code
        # the broker still answers, and the end offset is the acked records' count
        assert p.produce(TOPIC, 0, bytes(batch([b"probe"])))[0] == 0
    _acked[max(_acked, default=-1) + 1] = b"probe"
    assert _peak_rss() - _started[0] < RSS_BOUND


def test_every_acknowledged_record_is_fetched_back(fuzz_broker: BrokerThread) -> None:
    """After the fuzzing above (same module broker): nothing acked is lost or moved."""
    if not _acked:  # run alone or first
        test_fuzzed_batches(fuzz_broker)
    fetched = {r.offset: r.value for r in read_all(fuzz_broker.bootstrap, TOPIC)}
    assert sorted(fetched) == sorted(_acked)
    assert fetched == _acked
