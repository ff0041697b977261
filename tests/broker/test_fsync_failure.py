"""A failed fsync takes its partition offline (KAFKA_STORAGE_ERROR) until a restart, as Kafka
takes a log directory offline: after a failed fsync the kernel may have dropped the dirty pages,
so a later fsync that succeeds would acknowledge data the disk never got.

The one thing mocked is the disk's answer: ``os.fsync`` fails with EIO for descriptors of the
victim partition's files while a switch is on; everything else is the real broker, real sockets
and real files.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread
from tests.broker.log.conftest import make_batch
from tests.broker.raw_produce import RawProducer
from tests.kafka_helpers import create_topic

_STORAGE_ERROR = 56


class FailingDisk:
    """``os.fsync`` that fails with EIO for files under ``<data>/victim-0`` while ``failing``."""

    def __init__(self) -> None:
        self.failing = False
        self.failed = 0
        self._fsync = os.fsync

    def fsync(self, fd: int) -> None:
        if self.failing and "/victim-0/" in os.readlink(f"/proc/self/fd/{fd}"):
            self.failed += 1
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        self._fsync(fd)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[FailingDisk]:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name a descriptor's file")
    failing = FailingDisk()
    monkeypatch.setattr(os, "fsync", failing.fsync)
    yield failing


def _produce(bootstrap: str, topic: str, value: bytes) -> tuple[int, int]:
    with RawProducer(bootstrap) as producer:
        now = int(time.time() * 1000)
        return producer.produce(topic, 0, make_batch([(None, value, now)]))


def _until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_fsync_failure_with_fsync_always_takes_the_partition_offline_until_a_restart(
    broker_factory: Callable[..., BrokerThread], tmp_path: Path, disk: FailingDisk
) -> None:
    data = tmp_path / "data"
    broker = broker_factory({"streamrt.log.fsync": "always"}, data_dir=data)
    create_topic(broker.bootstrap, "victim")
    create_topic(broker.bootstrap, "healthy")
    assert _produce(broker.bootstrap, "victim", b"durable") == (0, 0)

    disk.failing = True
    assert _produce(broker.bootstrap, "victim", b"unsure")[0] == _STORAGE_ERROR
    assert disk.failed == 1
    disk.failing = False  # the disk "recovers": the partition must stay offline all the same
    assert _produce(broker.bootstrap, "victim", b"after")[0] == _STORAGE_ERROR
    assert disk.failed == 1  # refused before anything was written or fsynced
    assert _produce(broker.bootstrap, "healthy", b"fine") == (0, 0)

    broker.stop()
    again = broker_factory({"streamrt.log.fsync": "always"}, data_dir=data)
    code, offset = _produce(again.bootstrap, "victim", b"back")
    assert code == 0
    assert offset in (1, 2)  # after "durable", and after "unsure" if its pages reached the disk


def test_a_failed_background_flush_takes_only_its_partition_offline(
    broker_factory: Callable[..., BrokerThread], disk: FailingDisk
) -> None:
    broker = broker_factory({"streamrt.log.fsync": "interval", "log.flush.interval.ms": "50"})
    create_topic(broker.bootstrap, "victim")
    create_topic(broker.bootstrap, "healthy")
    disk.failing = True
    assert _produce(broker.bootstrap, "victim", b"queued")[0] == 0  # acks before the fsync
    _until(lambda: disk.failed >= 1)
    _until(lambda: _produce(broker.bootstrap, "victim", b"x")[0] == _STORAGE_ERROR)
    for i in range(3):  # the flush loop keeps flushing the others
        assert _produce(broker.bootstrap, "healthy", b"%d" % i) == (0, i)
    time.sleep(0.5)  # ten flush intervals
    assert disk.failed == 1  # an offline log is not fsynced again
