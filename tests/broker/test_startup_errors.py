"""``streamrt broker`` with a corrupt topic metadata file (issue 42): one clear line naming the
file, a non-zero exit, no traceback, and every file left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamrt.broker.config import BrokerConfig
from streamrt.broker.log import LogManager
from tests.broker import cli_broker


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\x8b\x00\xff garbage", "not UTF-8"),
        (b'{"name": "t", "topic_id": ', "not JSON"),
    ],
)
def test_cli_reports_the_corrupt_file_in_one_line(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    data = tmp_path / "broker"
    m = LogManager(data, BrokerConfig())
    m.load()
    m.create_topic("t", 2)
    m.close()
    meta = data / "meta" / "topics" / "t.json"
    meta.write_bytes(content)
    files = sorted(str(p.relative_to(data)) for p in data.rglob("*"))
    done = cli_broker.run_until_exit(data, cli_broker.free_port())
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("streamrt: error: corrupt metadata file")
    assert str(meta) in lines[-1] and problem in lines[-1]
    assert "Traceback" not in done.stderr
    assert sorted(str(p.relative_to(data)) for p in data.rglob("*")) == files
    assert meta.read_bytes() == content
