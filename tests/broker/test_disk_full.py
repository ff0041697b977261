"""A full disk (issue 42): produce answers KAFKA_STORAGE_ERROR (56), every acknowledged record
survives, and SIGTERM while the disk is full exits 0.

The data directory is a real 2 MiB tmpfs (mounting needs root; the test is skipped otherwise),
so ``ENOSPC`` comes from the kernel, not from a mock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamrt.broker.config import BrokerConfig
from streamrt.broker.log import LogManager
from tests.broker import cli_broker
from tests.broker.log.conftest import make_batch, read_all
from tests.broker.raw_produce import RawProducer
from tests.kafka_helpers import create_topic

_STORAGE_ERROR = 56


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize("segment_bytes", ["1073741824", "200000"])  # rolls hit it too
def test_full_disk_answers_storage_error_and_stops_cleanly(
    small_disk: Path, tmp_path: Path, segment_bytes: str
) -> None:
    data = small_disk / "broker"
    port = cli_broker.free_port()
    bootstrap = f"127.0.0.1:{port}"
    proc = cli_broker.start(data, port, stderr=tmp_path / "broker.log")
    acked: dict[int, bytes] = {}
    codes: list[int] = []
    try:
        create_topic(bootstrap, "full", **{"segment.bytes": segment_bytes})
        with RawProducer(bootstrap) as producer:
            for i in range(200):  # 200 x 32 KiB is three times the disk
                value = b"%06d" % i + os.urandom(32 * 1024)
                now = int(time.time() * 1000)  # an old timestamp would roll by segment.ms
                code, offset = producer.produce("full", 0, make_batch([(None, value, now)]))
                codes.append(code)
                if code == 0:
                    acked[offset] = value
                elif len(codes) - len(acked) >= 3:
                    break
        assert set(codes) == {0, _STORAGE_ERROR}, codes
        assert 10 < len(acked) < 70
        assert cli_broker.terminate(proc) == 0
    finally:
        proc.kill()
        proc.wait(30)
    copy = tmp_path / f"copy-{uuid.uuid4().hex[:6]}"
    shutil.copytree(data, copy)
    m = LogManager(copy, BrokerConfig())
    m.load()
    try:
        stored = {offset: value for offset, _key, value, _ts in read_all(m.log("full", 0))}
    finally:
        m.close()
    assert stored == acked
    segments = len(list((copy / "full-0").glob("*.log")))
    assert segments == 1 if segment_bytes == "1073741824" else segments > 3
