"""Factories for log tests: real RecordBatches (aiokafka's builder) and real logs on tmp dirs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from streamrt.broker.config import BrokerConfig
from streamrt.broker.log import LogManager, PartitionLog
from streamrt.broker.log.batch import iter_headers
from streamrt.clock import ManualClock

Record = tuple[bytes | None, bytes | None, int]  # key, value, timestamp


def make_batch(
    records: Sequence[Record],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    codec: int = 0,
) -> bytes:
    """One RecordBatch v2 as a client would send it (base offset 0)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value, headers=[("h", b"x")])
    return bytes(builder.build())


def value_batch(i: int, *, key: bytes | None = None, ts: int = 1_000, size: int = 10) -> bytes:
    return make_batch([(key, b"%d-" % i + b"x" * size, ts)])


def decode(records: bytes) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """(offset, key, value, timestamp) of every record in fetched bytes."""
    out = []
    for h in iter_headers(records):
        batch = DefaultRecordBatch(records[h.position : h.position + h.size])
        assert batch.validate_crc()
        out.extend((r.offset, r.key, r.value, r.timestamp) for r in batch)
    return out


def read_all(
    log: PartitionLog, start: int | None = None
) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """Fetch like a consumer: from log start to the end, advancing by batch."""
    offset = log.log_start_offset if start is None else start
    out: list[tuple[int, bytes | None, bytes | None, int]] = []
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20).records
        if not chunk:
            break
        out.extend(r for r in decode(chunk) if r[0] >= offset)
        offset = max(h.next_offset for h in iter_headers(chunk))
    return out


ManagerFactory = Callable[..., LogManager]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000_000)


@pytest.fixture
def manager_factory(tmp_path: Path, clock: ManualClock) -> Iterator[ManagerFactory]:
    """``manager_factory(**broker_overrides)`` → a loaded LogManager on ``tmp_path/data``."""
    made: list[LogManager] = []

    def make(overrides: Mapping[str, str] | None = None) -> LogManager:
        m = LogManager(tmp_path / "data", BrokerConfig(dict(overrides or {})), clock)
        m.load()
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


@pytest.fixture
def log_factory(manager_factory: ManagerFactory) -> Callable[..., PartitionLog]:
    """``log_factory(topic_configs, broker_overrides)`` → partition 0 of a new topic ``t``."""

    def make(
        configs: Mapping[str, str] | None = None, overrides: Mapping[str, str] | None = None
    ) -> PartitionLog:
        m = manager_factory(overrides)
        m.create_topic("t", 1, configs)
        return m.log("t", 0)

    return make
