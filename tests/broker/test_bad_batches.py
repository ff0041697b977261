"""Lying batches and compression bombs through a real Produce: refused with Kafka's codes,
nothing appended, memory bounded, and real clients still read the topic (issue 29, 4-5)."""

from __future__ import annotations

import pathlib

import pytest

from streamrt.broker.embedded import BrokerThread
from streamrt.broker.log.validator import UNCOMPRESSED_FLOOR
from tests.broker.batches import batch, bomb, lie_count
from tests.broker.raw_produce import RawProducer
from tests.kafka_helpers import create_topic, read_all

INVALID_RECORD, RECORD_LIST_TOO_LARGE = 87, 18
#: What one refused bomb may add to the process's peak RSS: the inflation bound (32 MiB) plus
#: the copies the validator makes of it, with room for the allocator (measured: < 100 MiB).
RSS_BOUND = 3 * UNCOMPRESSED_FLOOR + (64 << 20)
_CLEAR_REFS = pathlib.Path("/proc/self/clear_refs")


def _peak_rss() -> int:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _reset_peak_rss() -> int:
    """Reset the process's peak RSS to the current RSS (Linux ``clear_refs`` 5)."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        pytest.skip("cannot reset the peak RSS here")
    return _peak_rss()


def test_lying_record_count_is_refused_and_the_topic_stays_readable(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "lies", 1)
    with RawProducer(broker.bootstrap) as p:
        assert p.produce("lies", 0, bytes(batch([b"a"]))) == (0, 0)
        code, _ = p.produce("lies", 0, bytes(lie_count(batch([b"b"]), 2**31 - 1)))
        assert code == INVALID_RECORD
        code, _ = p.produce("lies", 0, bytes(batch([b"c", b"d"], deltas=[0, 7])))
        assert code == INVALID_RECORD
        assert p.produce("lies", 0, bytes(batch([b"e"]))) == (0, 1)
    assert [(r.offset, r.value) for r in read_all(broker.bootstrap, "lies")] == [
        (0, b"a"),
        (1, b"e"),
    ]


@pytest.mark.parametrize(
    ("codec", "topic_codec", "inflated_mib"),
    [(4, "producer", 1024), (3, "producer", 192), (1, "producer", 512), (4, "lz4", 1024)],
    ids=["zstd", "lz4", "gzip", "zstd-into-lz4-topic"],
)
def test_compression_bomb_is_refused_with_bounded_memory(
    broker: BrokerThread, codec: int, topic_codec: str, inflated_mib: int
) -> None:
    """Hundreds of MiB of zeros in under 1 MiB (issue 29's 34 KiB of zstd inflating to 1 GiB):
    refused once 32 MiB are inflated; before the validator the whole bomb was inflated."""
    create_topic(broker.bootstrap, "bombs", 1, **{"compression.type": topic_codec})
    payload = bytes(bomb(codec, inflated_mib << 20))
    assert len(payload) < 1_048_588  # under max.message.bytes: only the inflation check stops it
    with RawProducer(broker.bootstrap) as p:
        before = _reset_peak_rss()
        code, _ = p.produce("bombs", 0, payload)
        grown = _peak_rss() - before
        assert code == RECORD_LIST_TOO_LARGE
        assert grown < RSS_BOUND, f"peak RSS grew {grown >> 20} MiB"
        assert p.produce("bombs", 0, bytes(batch([b"ok"], codec=codec))) == (0, 0)
    assert [r.value for r in read_all(broker.bootstrap, "bombs")] == [b"ok"]
