"""Start-up never deletes data it cannot account for (issue 42): a partition directory without
topic metadata is renamed aside as ``<dir>.<uuid>-stray`` and logged; a corrupt metadata file
stops the load with an error naming the file and what is wrong, and nothing is touched."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from streamrt.broker.log.topic_store import CorruptMetadataError
from tests.broker.log.conftest import ManagerFactory, read_all, value_batch


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path) with a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _topic_with_data(manager_factory: ManagerFactory, name: str, partitions: int) -> None:
    m = manager_factory()
    m.create_topic(name, partitions)
    for p in range(partitions):
        for i in range(3):
            m.log(name, p).append(value_batch(i), 1_000)
    m.close()


def test_partition_directory_without_metadata_is_kept_aside(
    manager_factory: ManagerFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    _topic_with_data(manager_factory, "lost", 2)
    _topic_with_data(manager_factory, "kept", 1)
    before = {p: _tree(data / f"lost-{p}") for p in range(2)}
    (data / "meta" / "topics" / "lost.json").unlink()
    with caplog.at_level(logging.WARNING, logger="streamrt.broker.log"):
        m = manager_factory()
    assert "lost" not in m.topics()
    assert len(read_all(m.log("kept", 0))) == 3
    for p in range(2):
        assert not (data / f"lost-{p}").exists()
        strays = list(data.glob(f"lost-{p}.*-stray"))
        assert len(strays) == 1
        assert _tree(strays[0]) == before[p]  # every file, byte for byte
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert any(str(data / f"lost-{p}") in r.getMessage() + str(vars(r)) for r in warned)
    m.close()
    # A second start leaves the stray directories alone, and the name can be reused.
    m2 = manager_factory()
    assert len(list(data.glob("lost-*-stray"))) == 2
    m2.create_topic("lost", 1)
    assert m2.log("lost", 0).log_end_offset == 0


_GOOD = {
    "name": "t",
    "topic_id": "7f0c2a49-32a2-4f7e-9a3c-6b3e0e1b2c3d",
    "num_partitions": 1,
    "configs": {},
    "internal": False,
}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\xff\xfe\x00garbage\x9c", "not UTF-8"),
        (b'{"name": "t", "num_parti', "not JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (json.dumps({**_GOOD, "num_partitions": "many"}).encode(), "num_partitions"),
        (json.dumps({**_GOOD, "num_partitions": 0}).encode(), "num_partitions"),
        (json.dumps({k: v for k, v in _GOOD.items() if k != "topic_id"}).encode(), "topic_id"),
        (json.dumps({**_GOOD, "name": "other"}).encode(), "does not match the file name"),
        (json.dumps({**_GOOD, "configs": {"retention.ms": 5}}).encode(), "configs"),
    ],
)
def test_corrupt_metadata_stops_the_load_and_touches_nothing(
    manager_factory: ManagerFactory, tmp_path: Path, content: bytes, problem: str
) -> None:
    data = tmp_path / "data"
    _topic_with_data(manager_factory, "t", 1)
    meta = data / "meta" / "topics" / "t.json"
    meta.write_bytes(content)
    before = _tree(data)
    with pytest.raises(CorruptMetadataError) as err:
        manager_factory()
    assert str(meta) in str(err.value) and problem in str(err.value)
    assert _tree(data) == before


def test_create_topic_keeps_an_existing_directory_aside(
    manager_factory: ManagerFactory, tmp_path: Path
) -> None:
    """A directory left by a topic deletion that failed half-way is not wiped by a new topic
    of the same name."""
    data = tmp_path / "data"
    m = manager_factory()
    (data / "t-0").mkdir()
    (data / "t-0" / "00000000000000000000.log").write_bytes(b"old records")
    m.create_topic("t", 1)
    assert m.log("t", 0).log_end_offset == 0
    (stray,) = data.glob("t-0.*-stray")
    assert _tree(stray) == {"00000000000000000000.log": hashlib.sha256(b"old records").hexdigest()}


def test_corrupt_producer_id_block_is_refused_with_its_path(
    manager_factory: ManagerFactory, tmp_path: Path
) -> None:
    manager_factory().close()
    block = tmp_path / "data" / "meta" / "producer-id-block.json"
    block.write_bytes(b"\x00\xffnot json")
    with pytest.raises(CorruptMetadataError) as err:
        manager_factory()
    assert str(block) in str(err.value) and "not UTF-8" in str(err.value)
